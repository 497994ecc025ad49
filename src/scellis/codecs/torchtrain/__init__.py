"""A PyTorch training package (codecs layer): ``scellis export … --to torch-train``.

``package`` writes the folder (model, data pipeline, optimizer, train.py, checkpoints);
``sources`` copies Scellis' own data, Philox and optimizer-scalar code into it as text;
``checkpoint`` reads train.py's checkpoints back. Nothing here imports torch.
"""
