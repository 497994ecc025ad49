"""Models (model layer): catalog blocks assembled into trainable module trees."""

from .build import RecordModel  # noqa: F401
from .finetune import finetune_model, finetuned_record, load_weights  # noqa: F401
from .zoo import CharTransformer, LSTMForecaster  # noqa: F401
