"""A user-style two-tower recommender: a user tower (id embedding + dense features) and an item
tower (id and category embeddings), their dot product as the click logit, and a custom loss
(binary cross-entropy on the 0/1 click label). The popularity-bias head is only used when
serving, so its parameters get no gradient in training.

  trainlab model add examples/two_tower.py:two_tower \
      --input user_ids:int64[256]:0..4999 --input user_features:float32[256,8] \
      --input item_ids:int64[256]:0..9999 --input item_categories:int64[256]:0..49 \
      --target clicked:int64[256]:0..1 --loss click_loss
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TwoTower(nn.Module):
    def __init__(self, users, items, categories, features, dim):
        super().__init__()
        self.user_embedding = nn.Embedding(users, dim)
        self.user_mlp = nn.Sequential(nn.Linear(dim + features, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
        self.item_embedding = nn.Embedding(items, dim)
        self.category_embedding = nn.Embedding(categories, dim)
        self.item_mlp = nn.Sequential(nn.Linear(2 * dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
        self.popularity_bias = nn.Linear(dim, 1)  # serving only

    def forward(self, user_ids, user_features, item_ids, item_categories):
        user = self.user_mlp(torch.cat([self.user_embedding(user_ids), user_features], dim=1))
        item = self.item_mlp(torch.cat([self.item_embedding(item_ids), self.category_embedding(item_categories)], dim=1))
        return (F.normalize(user, dim=1) * F.normalize(item, dim=1)).sum(1) * 10.0


def two_tower(users=5000, items=10000, categories=50, features=8, dim=32):
    return TwoTower(users, items, categories, features, dim)


def click_loss(logits, clicked):
    return F.binary_cross_entropy_with_logits(logits, clicked.float())
