"""Dash pages, one per file.  How a page plugs into the shell:

* ``dash.register_page(__name__, path="/cooling", name="Cooling", title="Cooling · ClusterTwin")``
  at module level; ``layout(**kwargs)`` builds the page (query-string parameters arrive
  as ``kwargs``, so ``/cooling?cdu=H1-R01-K01-CDU`` can restore a selection).  Nothing heavy
  runs at import.  The layout is decorated with ``dashboard.views.registry.view_layout`` and reads
  the view(s) on screen with ``layout_screen(**kwargs)`` (``?view=…&compare=…``): a view
  that cannot be shown becomes a message.
* Callbacks sit beside the layout, registered with ``dash.callback``;
  :func:`dashboard.app.create_app` hands them to the app.  Every callback that reads the
  view takes the shell's screen store, ``State(ids.Shell.SCREEN, "data")`` (the page path
  and view parameters of the URL), and reads data with
  ``dashboard.views.registry.callback_view(shown, PATH)`` — the :class:`twin.engine.view.View`
  on screen (``latest_tick()`` for the snapshot with its detail, ``trend()``, ``state``...),
  never anything of the live hub but that view.  ``PATH`` is the page's registered path:
  the update stops when the store names another page (navigation removed this one).  Live
  callbacks take ``Input(ids.Shell.TICK, "n_intervals")`` (the shell's ≤ 2 s interval);
  their figure patches go through a relay store (:mod:`dashboard.callbacks.patch_relay`)
  with the screen they were computed for.  A page with numbers registers a comparison
  builder with ``dashboard.views.compare.register`` and places
  ``compare.section(PAGE, screen)`` in its layout.
* Ids come from :mod:`dashboard.ids` (append a class per page at the end of that file);
  figures are pure builders in ``dashboard/figures/`` using ``dashboard.present.theme.base_layout``;
  cards from ``dashboard.components``.
* Page modules import only once an app exists (``dash.register_page`` needs it): unit
  tests use the ``page_module`` fixture of ``tests/dashboard/conftest.py``.
"""
