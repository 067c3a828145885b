"""Dash pages, one per file.  How a page plugs into the shell:

* ``dash.register_page(__name__, path="/cooling", name="Cooling", title="Cooling · ClusterTwin")``
  at module level; ``layout(**kwargs)`` builds the page (query-string parameters arrive
  as ``kwargs``, so ``/cooling?cdu=H1-R01-K01-CDU`` can restore a view).  Nothing heavy
  runs at import.
* Callbacks sit beside the layout, registered with ``dash.callback``;
  :func:`dashboard.app.create_app` hands them to the app.  Live callbacks take
  ``Input(ids.Shell.TICK, "n_intervals")`` (the shell's ≤ 2 s interval) and read data
  with ``dashboard.views.current_view()`` (``latest()``, ``trend()``, ``state``...).
* Ids come from :mod:`dashboard.ids` (append a class per page at the end of that file);
  figures are pure builders in ``dashboard/figures/`` using ``dashboard.theme.base_layout``;
  cards from ``dashboard.components``.
* Page modules import only once an app exists (``dash.register_page`` needs it): unit
  tests use the ``page_module`` fixture of ``tests/dashboard/conftest.py``.
"""
