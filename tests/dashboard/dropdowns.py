"""Pick an option in a ``dcc.Dropdown`` from a browser test, waiting on the dropdown's state.

Dash's dropdown is a button (``aria-expanded``, ``aria-controls``) that opens a popover holding a
search box and the options.  Typing key by key right after the click raced the popover: on a
loaded machine the keys could reach the page before the search box had focus, and the option
never showed.  :func:`choose` waits for the popover to be open, fills its own search box in one
step (a server-searched list gets one ``search_value``) and waits for the option.
"""

from __future__ import annotations

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

STEP_MS = 8_000  # the longest wait for one state of the dropdown on a loaded 2-core machine
ATTEMPTS = 4


def choose(page, dropdown_id: str, text: str) -> None:
    """Open dropdown ``dropdown_id``, search for ``text`` and pick the option labelled exactly ``text``.

    A list whose options a callback replaces (a row list answering the hall chosen just before)
    closes its popover; the pick then starts again from the closed state, up to four times.
    """
    trigger = page.locator(f"#{dropdown_id}")
    seen = ""
    for _ in range(ATTEMPTS):
        try:
            if trigger.get_attribute("aria-expanded", timeout=STEP_MS) != "true":
                trigger.click(timeout=STEP_MS)
            expect(trigger).to_have_attribute("aria-expanded", "true", timeout=STEP_MS)
            popover = page.locator(f'[id="{trigger.get_attribute("aria-controls", timeout=STEP_MS)}"]')
            search = popover.locator("input.dash-dropdown-search")
            search.fill(text, timeout=STEP_MS)
            option = popover.get_by_role("option", name=text, exact=True)
            expect(option).to_be_visible(timeout=STEP_MS)
            option.click(timeout=STEP_MS)
            expect(trigger).to_contain_text(text, timeout=STEP_MS)
            return
        except (AssertionError, PlaywrightError):
            seen = _popover_state(page, trigger)
            page.keyboard.press("Escape")
    raise AssertionError(f"dropdown #{dropdown_id}: no option {text!r} after {ATTEMPTS} attempts ({seen})")


def _popover_state(page, trigger) -> str:
    """What the dropdown showed when a pick failed: open or not, its search text, its first options."""
    return page.evaluate(
        """(button) => {
            const box = document.getElementById(button.getAttribute('aria-controls') || '');
            if (!box) { return 'popover closed'; }
            const search = box.querySelector('input.dash-dropdown-search');
            const options = [...box.querySelectorAll('[role=option]')].slice(0, 5).map(o => o.innerText.trim());
            return `search ${JSON.stringify(search ? search.value : null)}, options ${JSON.stringify(options)}`;
        }""",
        trigger.element_handle(timeout=STEP_MS),
    )
