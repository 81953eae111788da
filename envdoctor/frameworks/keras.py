"""Keras: shown on TensorFlow's line."""

from . import Framework

FRAMEWORK = Framework("keras", "Keras", False, companion_of="tensorflow", distributions="keras", order=90)
