"""Character LSTM for Shakespeare (FedSAGD §5.1, App. A.2, Table 6; the FedDyn model):
Embedding(80 -> 8) -> 2-layer LSTM(hidden 100) -> linear head on the last time step -> 80 logits.
133,520 parameters with an 80-symbol vocabulary."""
from __future__ import annotations

import torch
import torch.nn as nn

from .model_registry import MODELS


class CharLSTM(nn.Module):
    def __init__(self, vocab: int, num_classes: int, embed: int = 8, hidden: int = 100, layers: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(x.long()))
        return self.head(out[:, -1])


@MODELS.register("char_lstm")
def char_lstm(input_shape, num_classes, vocab: int | None = None, embed: int = 8, hidden: int = 100,
              layers: int = 2) -> nn.Module:
    """`input_shape` is (sequence length,); the vocabulary defaults to the number of classes (next character)."""
    return CharLSTM(vocab or num_classes, num_classes, embed, hidden, layers)
