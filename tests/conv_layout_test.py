"""The exporter's choice of convolution weight layout (scenarios/export/aot_compile.py
conv_weights_channels_last), on CPU with oneDNN: every Conv2d weight gets explicit channels-last
strides, including the ambiguous depthwise and 1x1 ones, with the model's values, buffers and
output unchanged; a model whose forward views a weight as contiguous keeps its own layout.

  python conv_layout_test.py SOURCE_DIR
Exit status 0 when every check holds, 1 otherwise; 77 (skipped) without oneDNN.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(sys.argv[1], "scenarios", "export"))
import aot_compile  # noqa: E402


def check(condition, what, *details):
    if not condition:
        print("FAIL: %s\n%s" % (what, "\n".join(str(d) for d in details)), file=sys.stderr)
        sys.exit(1)
    print("ok: %s" % what)


class Blocks(nn.Module):
    """A 3x3 convolution, BatchNorm, a 5x5 depthwise one and a 1x1 one: the ambiguous cases."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.depthwise = nn.Conv2d(8, 8, 5, padding=2, groups=8, bias=False)
        self.pointwise = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.pointwise(self.depthwise(torch.relu(self.norm(self.stem(x))))).mean((2, 3))


class ViewsItsWeight(nn.Conv2d):
    """Weight standardisation written with .view, as some user code does: needs a contiguous weight."""

    def forward(self, x):
        flat = self.weight.view(self.weight.size(0), -1)
        weight = ((flat - flat.mean(1, keepdim=True)) / (flat.std(1, keepdim=True) + 1e-5)).view_as(self.weight)
        return nn.functional.conv2d(x, weight, self.bias, self.stride, self.padding)


def with_loss(net):
    loss = lambda out, inputs, target: nn.functional.cross_entropy(out, target)  # noqa: E731
    return aot_compile.WithLoss(net, loss, "cpu", False).train()


def main():
    if not torch.backends.mkldnn.is_available():
        print("conv_layout_test: skipped: this PyTorch has no oneDNN")
        sys.exit(77)
    torch.manual_seed(0)
    example = (torch.randn(2, 3, 6, 6), torch.tensor([1, 3]))
    model = with_loss(Blocks())
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        expected = model.eval()(*example)[0]
    model.train()
    strides = aot_compile.conv_weights_channels_last(model, "cpu", example)
    check(strides == {"net.stem.weight": [27, 1, 9, 3], "net.depthwise.weight": [25, 1, 5, 1],
                      "net.pointwise.weight": [8, 1, 8, 8]}, "the three weights' channels-last strides", strides)
    check(all(list(model.get_parameter(name).stride()) == s for name, s in strides.items()),
          "the parameters carry them", {n: model.get_parameter(n).stride() for n in strides})
    check(all(torch.equal(v, before[k]) for k, v in model.state_dict().items()),
          "values and BatchNorm statistics unchanged by the probe step")
    check(all(p.grad is None for p in model.parameters()), "no gradient left behind")
    with torch.no_grad():
        check(torch.allclose(model.eval()(*example)[0], expected, atol=1e-6), "the same output")
    check(aot_compile.conv_weights_channels_last(model, "cuda", example) == {}, "CUDA models keep their layout")

    viewing = with_loss(nn.Sequential(ViewsItsWeight(3, 4, 3), nn.Flatten(2), nn.Flatten(1), nn.Linear(64, 5)))
    check(aot_compile.conv_weights_channels_last(viewing, "cpu", example) == {} and
          viewing.net[0].weight.is_contiguous(), "a forward that views its weight keeps it contiguous",
          viewing.net[0].weight.stride())
    viewing(*example)[0].backward()  # and still trains
    check(viewing.net[0].weight.grad is not None, "that model still trains")


if __name__ == "__main__":
    main()
