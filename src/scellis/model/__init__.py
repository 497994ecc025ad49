"""Models (model layer): catalog blocks assembled into trainable module trees."""

from .zoo import CharTransformer, LSTMForecaster  # noqa: F401
