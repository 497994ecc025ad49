"""Data (data layer): connectors, windowing, splits, dataset hashing and torch-shaped
loaders (``TensorDataset``, ``DataLoader``), pure Python."""

from .csvsource import CSVConfig, SeriesDataset, load_csv  # noqa: F401
from .loader import *  # noqa: F403 (torch.utils.data's names: its __all__)
from .record import load_data  # noqa: F401
from .series import Windows, read_csv_column, window_series  # noqa: F401
from .shuffle import shuffled_order  # noqa: F401
from .table import Table, read_table  # noqa: F401
from .text import CharVocab, TextDataset, char_windows, read_text, text_dataset  # noqa: F401
