"""Site model and files: site-file schema and loader, the equipment catalogue, the static site tables."""
