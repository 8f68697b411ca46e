"""A user-style image classifier: three conv + BatchNorm + ReLU stages, global pooling, dropout
and a linear head. BatchNorm's running statistics are buffers the training step updates.

  trainlab model add examples/small_cnn.py:small_cnn --input images:float32[32,3,32,32] \
      --target labels:int64[32]:0..9 --loss cross_entropy
"""
import torch.nn as nn


def stage(channels_in, channels_out, stride):
    return nn.Sequential(
        nn.Conv2d(channels_in, channels_out, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(channels_out),
        nn.ReLU(),
    )


class SmallCnn(nn.Module):
    def __init__(self, width, classes, dropout):
        super().__init__()
        self.features = nn.Sequential(stage(3, width, 1), stage(width, 2 * width, 2), stage(2 * width, 4 * width, 2))
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(4 * width, classes)

    def forward(self, images):
        x = self.features(images).mean((2, 3))
        return self.head(self.dropout(x))


def small_cnn(width=16, classes=10, dropout=0.2):
    return SmallCnn(width, classes, dropout)
