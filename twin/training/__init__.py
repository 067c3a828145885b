"""Training models: step time under parallelism, goodput, job files, jobs placed on a site, validation cases."""
