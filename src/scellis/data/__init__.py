"""Data (data layer): connectors, windowing, splits and dataset hashing, pure Python."""

from .series import Windows, read_csv_column, window_series  # noqa: F401
from .text import CharVocab, char_windows  # noqa: F401
