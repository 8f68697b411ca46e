"""Factories of small, random-initialised models as the libraries give them (no weights are
downloaded), for the ecosystem test (tests/ecosystem_test.py): a torchvision CNN with BatchNorm,
a Hugging Face causal LM and encoder, a timm vision transformer, and a hand-written LSTM."""
import torch.nn as nn


def mobilenet(num_classes=10):
    """torchvision's MobileNetV3-small (BatchNorm, hardswish, squeeze-excitation); images 3x32x32."""
    import torchvision

    return torchvision.models.mobilenet_v3_small(num_classes=num_classes)


def gpt2(vocab=128, positions=32, width=32, layers=2, heads=2):
    """transformers' GPT2LMHeadModel from a tiny config: returns a CausalLMOutputWithCrossAttentions."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=vocab, n_positions=positions, n_embd=width, n_layer=layers, n_head=heads,
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config)


def bert(vocab=128, width=32, layers=2, heads=2, labels=3):
    """transformers' BertForSequenceClassification from a tiny config (input_ids, attention_mask,
    labels -> SequenceClassifierOutput with its loss)."""
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=vocab, hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=2 * width, max_position_embeddings=64, num_labels=labels)
    return BertForSequenceClassification(config)


def vit(num_classes=10):
    """timm's vit_tiny_patch16 at 32x32 images (4 patches of 16x16 and a class token)."""
    import timm

    return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, num_classes=num_classes)


class LSTMTagger(nn.Module):
    """A hand-written recurrent model: embedding, a two-layer LSTM with dropout, a linear head."""

    def __init__(self, vocab, width, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, num_layers=2, dropout=0.1, batch_first=True)
        self.head = nn.Linear(width, classes)

    def forward(self, tokens):
        hidden, _ = self.lstm(self.embed(tokens))
        return self.head(hidden[:, -1])


def lstm(vocab=100, width=32, classes=5):
    return LSTMTagger(vocab, width, classes)
