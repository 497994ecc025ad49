"""The strongest torch peers of a replayed Scellis step, built on bench/train_step.py's
models: the whole step captured as one CUDA graph (capturable Adam), and the step under
``torch.compile``. Each builder returns ``(step, sync)`` as ``train_step.torch_step`` does.

The CUDA graph is what a replayed step is (one recording, replayed with no host work
per op), so it is the fair upper bound for replay. Capture follows torch's recipe: warm
up on a side stream, capture forward + backward + ``opt.step()`` with the gradients
left in place (``zero_grad(set_to_none=False)`` inside the graph keeps their buffers).
"""

from __future__ import annotations

from train_step import torch_parts


def torch_graph_step(cfg, device):
    import torch

    _, fwd, loss_fn, opt, xt, yt = torch_parts(cfg, device, capturable=True)

    def body():
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(fwd(xt), yt)
        loss.backward()
        opt.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # lets cuDNN/cuBLAS pick their algorithms outside the capture
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = body()

    def step():
        graph.replay()
        return captured

    return step, lambda loss: loss.item()


def torch_compile_step(cfg, device):
    import torch

    _, fwd, loss_fn, opt, xt, yt = torch_parts(cfg, device)
    compiled = torch.compile(lambda xb, yb: loss_fn(fwd(xb), yb))

    @torch.compile
    def update():
        opt.step()

    def step():
        opt.zero_grad()
        loss = compiled(xt, yt)
        loss.backward()
        update()
        return loss

    return step, lambda loss: loss.item()


PEERS = {"graph": torch_graph_step, "compile": torch_compile_step}
