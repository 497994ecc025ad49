"""Benchmark hooks for the browser tab: worker commands that time a train step and a
QLoRA base's load and quantisation. Not part of the shipped package: a site built with
``scellis site build --extra-package bench/tab/tabbench`` carries it as its own wheel and
the worker imports ``tabbench`` at boot (bench/browser_*.py and the browser tests
build their sites so)."""

from . import api  # noqa: F401 - registers the commands: importing the package is enough
