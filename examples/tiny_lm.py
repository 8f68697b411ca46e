"""A user-style decoder-only language model (GPT-like): token and position embeddings, pre-norm
blocks with causal self-attention written out (matmul, mask, softmax) and a GELU MLP, the output
head tied to the token embedding, and a custom loss (next-token cross-entropy over every position).

  trainlab model add examples/tiny_lm.py:tiny_lm --input tokens:int64[8,64]:0..999 \
      --target next_tokens:int64[8,64]:0..999 --loss lm_loss
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.dim, self.heads, self.head_dim = dim, heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        batch, seq = x.size(0), x.size(1)
        q, k, v = self.qkv(x).split(self.dim, dim=2)
        q, k, v = (t.view(batch, seq, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        mask = torch.ones(seq, seq, dtype=torch.bool, device=x.device).tril()
        weights = self.dropout(scores.masked_fill(~mask, float("-inf")).softmax(-1))
        y = (weights @ v).transpose(1, 2).reshape(batch, seq, self.dim)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attention = CausalSelfAttention(dim, heads, dropout)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyLm(nn.Module):
    def __init__(self, vocab, dim, layers, heads, max_seq, dropout):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied input and output embeddings

    def forward(self, tokens):
        positions = torch.arange(tokens.size(1), device=tokens.device)
        x = self.tokens(tokens) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def tiny_lm(vocab=1000, dim=64, layers=2, heads=4, max_seq=64, dropout=0.1):
    return TinyLm(vocab, dim, layers, heads, max_seq, dropout)


def lm_loss(logits, next_tokens):
    return F.cross_entropy(logits.flatten(0, 1), next_tokens.flatten())
