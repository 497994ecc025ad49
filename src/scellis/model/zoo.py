"""Two reference models (model layer): an LSTM forecaster and a char-level Transformer.

Both are plain compositions of catalog blocks, so their parameter paths are the
blocks' (``lstm.weight_ih_l0``, ``body.blocks.0.attn.q.weight``) and they run on
every device. The example records (``examples/lstm_forecaster.sml``,
``examples/char_transformer.sml``) describe the same trees.
"""

from __future__ import annotations

from ..catalog.blocks.heads import LMHead, LMHeadConfig, RegressionHead, RegressionHeadConfig
from ..catalog.blocks.linear import Embedding, EmbeddingConfig
from ..catalog.blocks.position import LearnedPosition, LearnedPositionConfig
from ..catalog.blocks.recurrent import LSTM, LSTMConfig
from ..catalog.blocks.transformer import Transformer, TransformerConfig
from ..catalog.module import Module


class LSTMForecaster(Module):
    """[B, T, F] windows -> [B, horizon]: a stacked LSTM's last step, then a linear head."""

    def __init__(
        self,
        input_size=1,
        hidden_size=32,
        num_layers=1,
        horizon=1,
        *,
        device=None,
        dtype=None,
        gen=None,
        fused=True,
    ):
        super().__init__()
        ctx = {"device": device, "dtype": dtype, "gen": gen}
        self.lstm = LSTM(
            LSTMConfig(input_size, hidden_size, num_layers, output="last", fused=fused), **ctx
        )
        self.head = RegressionHead(RegressionHeadConfig(hidden_size, horizon), **ctx)

    def forward(self, x):
        return self.head(self.lstm(x))


class CharTransformer(Module):
    """Token ids [B, T] -> next-token logits [B, T, vocab]: embedding + learned positions,
    a causal pre-norm stack, a final norm and a language-model head."""

    def __init__(
        self,
        vocab_size,
        d_model=64,
        num_heads=4,
        num_layers=2,
        context=64,
        *,
        device=None,
        dtype=None,
        gen=None,
        dropout=0.0,
        attention="auto",
    ):
        super().__init__()
        ctx = {"device": device, "dtype": dtype, "gen": gen}
        self.tok = Embedding(EmbeddingConfig(vocab_size, d_model), **ctx)
        self.pos = LearnedPosition(LearnedPositionConfig(context, d_model, std=0.02), **ctx)
        cfg = TransformerConfig(
            d_model, num_heads, num_layers, kind="decoder", dropout=dropout, attention=attention
        )
        self.body = Transformer(cfg, **ctx)
        self.head = LMHead(LMHeadConfig(d_model, vocab_size), **ctx)

    def forward(self, ids):
        return self.head(self.body(self.pos(self.tok(ids))))
