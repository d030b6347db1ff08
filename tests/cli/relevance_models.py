"""The models of the relevance tests (test_relevance, test_crp): torchvision's with batch norms that
do something, and a two-head model whose scores are its second element."""
import torch.nn as nn
import torch


def randomised_norms(model):
    """Batch norms that do something: random statistics and affine parameters. Their eps is 0:
    Zennit's canonizer leaves each merged batch norm in place with running_var = 1, which then
    divides by √(1 + eps), 1 − 5e-6 for the default eps, so its relevance and its forward carry
    that factor once per batch norm (test_zennit_leaves_a_factor_per_merged_norm). With eps = 0 it
    is the identity, and the two definitions agree."""
    generator = torch.Generator().manual_seed(1)
    torch.manual_seed(2)  # the same weights whichever test runs first
    for module in model.modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            module.reset_parameters()
        if isinstance(module, nn.BatchNorm2d):
            module.eps = 0.0
            n = module.num_features
            module.running_mean.copy_(torch.rand(n, generator=generator) - 0.5)
            module.running_var.copy_(torch.rand(n, generator=generator) * 1.5 + 0.5)
            module.weight.data.copy_(torch.rand(n, generator=generator) + 0.5)
            module.bias.data.copy_((torch.rand(n, generator=generator) - 0.5) * 0.4)
    return model.eval()


class TwoHeads(nn.Module):
    """A multi-task net's (region [N, 3], classes [N, 4]): pooling as a module, so that Zennit rules it."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(11)
        self.features = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 8, (3, 5), padding=(1, 2)),
                                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.region = nn.Linear(8, 3)
        self.classes = nn.Linear(8, 4)

    def forward(self, x):
        f = self.features(x)
        return self.region(f), self.classes(f)


class Element(nn.Module):
    def __init__(self, model, index):
        super().__init__()
        self.model, self.index = model, index

    def forward(self, x):
        return self.model(x)[self.index]
