"""The what-if editor: edits as the browser builds them, the scenario store, the answer and its tables."""
