"""Renderers: the only code that prints.  Human text and JSON come from the same objects."""
