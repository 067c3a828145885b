/* Header search keys: Ctrl-K / Cmd-K focuses the box, Enter opens the first suggestion,
   Escape clears it; opening a suggestion clears the box. */
(function () {
    var INPUT = 'shell-search';
    var RESULTS = 'shell-search-results';

    function setValue(input, value) {
        // A React-controlled input: set through the native setter so Dash sees the change.
        var setter = Object.getOwnPropertyDescriptor(window.HTMLInputElement.prototype, 'value').set;
        setter.call(input, value);
        input.dispatchEvent(new Event('input', { bubbles: true }));
    }

    function clear(input) {
        setValue(input, '');
        var results = document.getElementById(RESULTS);
        if (results) { results.hidden = true; }
    }

    document.addEventListener('keydown', function (event) {
        var input = document.getElementById(INPUT);
        if (!input) { return; }
        if ((event.ctrlKey || event.metaKey) && !event.altKey && (event.key === 'k' || event.key === 'K')) {
            event.preventDefault();
            input.focus();
            input.select();
            return;
        }
        if (event.target !== input) { return; }
        if (event.key === 'Escape') {
            event.preventDefault();
            clear(input);
        } else if (event.key === 'Enter') {
            var first = document.querySelector('#' + RESULTS + ' a.search-hit');
            if (first) {
                event.preventDefault();
                first.click();
            }
        }
    });

    document.addEventListener('click', function (event) {
        var hit = event.target.closest && event.target.closest('#' + RESULTS + ' a.search-hit');
        var input = document.getElementById(INPUT);
        if (hit && input) {
            setTimeout(function () { clear(input); input.blur(); }, 0);
        }
    });
})();
