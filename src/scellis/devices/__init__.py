"""Devices (devices layer): the backend protocol and backends found by name, lazily."""

from .base import Backend, Buffer, View, available_devices, get_device  # noqa: F401
