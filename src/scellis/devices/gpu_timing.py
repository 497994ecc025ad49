"""GPU time per dispatch from timestamp queries (devices layer, native WebGPU).

While timing, every dispatch runs in a compute pass of its own whose start and end the
GPU stamps into a query set; ``read`` resolves the stamps and returns each dispatch's
label with its GPU time. A pass per dispatch costs a little GPU time itself, so these
times are for seeing where a step's time goes, not for benchmarks. WebGPU gives the
stamps in nanoseconds. (wgpu is imported by ``native_wgpu`` alone: it hands the usage
flags in.)
"""

from __future__ import annotations

import struct

PAIRS_PER_SET = 1024  # dispatches one query set holds (two stamps each)


class DispatchTimer:
    """Query sets for one timed stretch of work, and the label of each dispatch."""

    def __init__(self, device, resolve_usage):
        self.device, self.resolve_usage = device, resolve_usage
        self.sets: list = []
        self.labels: list[list[str]] = []

    def pass_for(self, encoder, label: str):
        """A compute pass for one dispatch, stamped at its start and end."""
        if not self.sets or len(self.labels[-1]) == PAIRS_PER_SET:
            self.sets.append(self.device.create_query_set(type="timestamp",
                                                          count=2 * PAIRS_PER_SET))  # fmt: skip
            self.labels.append([])
        i = len(self.labels[-1])
        self.labels[-1].append(label)
        return encoder.begin_compute_pass(timestamp_writes={
            "query_set": self.sets[-1], "beginning_of_pass_write_index": 2 * i,
            "end_of_pass_write_index": 2 * i + 1,
        })  # fmt: skip

    async def read(self, gpu) -> list[tuple[str, float]]:
        """(label, GPU seconds) of every timed dispatch, in order."""
        out = []
        for qs, labels in zip(self.sets, self.labels):
            n = 2 * len(labels)
            buf = self.device.create_buffer(size=8 * n, usage=self.resolve_usage)
            enc = self.device.create_command_encoder()
            enc.resolve_query_set(qs, 0, n, buf, 0)
            self.device.queue.submit([enc.finish()])
            stamps = struct.unpack(f"<{n}Q", await gpu.read_buffer(buf, 0, 8 * n))
            buf.destroy()
            for i, label in enumerate(labels):
                out.append((label, max(0, stamps[2 * i + 1] - stamps[2 * i]) * 1e-9))
        return out
