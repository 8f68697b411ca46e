"""Small torch-only models in the forms libraries and users write them, for tests/ecosystem_test.py:
a forward taking one dict, one returning a tuple, keyword inputs in another order than forward's,
a forward that cannot take tensors, activation checkpointing and a custom autograd.Function."""
import torch
import torch.nn as nn
import torch.utils.checkpoint


class DictInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)
        self.b = nn.Linear(6, 4)

    def forward(self, batch):
        return self.a(batch["x"]) + self.b(batch["z"])


def dict_input():
    return DictInput()


class TupleOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        hidden = torch.relu(self.body(x))
        return hidden, self.head(hidden)


def tuple_output():
    return TupleOutput()


class KeywordOrder(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)
        self.b = nn.Linear(6, 4)

    def forward(self, x, mask=None, z=None):
        return self.a(x) + self.b(z)


def keyword_order():
    return KeywordOrder()


class ListInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)

    def forward(self, xs, *, scale):
        return self.a(xs[0]) * scale


def list_input():
    return ListInput()


class Checkpointed(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        hidden = torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)
        return self.head(hidden)


def checkpointed():
    return Checkpointed()


class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 0).to(grad.dtype)


class CustomFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(Clamp.apply(self.body(x)))


def custom_function():
    return CustomFunction()
