"""The bundled demo model in eager PyTorch (scripts/train_demo_model.py) with the weights of its
TorchScript file, and what forward hooks on it see: the oracle that test_cli.py and test_job.py
compare TorchScope's grabs, recordings and probes with."""
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
FASHION = ROOT / "resources" / "demo" / "fashion_cnn.pt"
sys.path.insert(0, str(ROOT / "scripts"))
from train_demo_model import FashionCNN, MEAN, STD  # noqa: E402,F401  (MEAN, STD: the model's input setup)


def demo_model():
    """The demo model as an eager nn.Module, its weights loaded from the TorchScript file."""
    model = FashionCNN()
    model.load_state_dict(torch.jit.load(str(FASHION)).state_dict())
    return model.eval()


def demo_hooked(x, layers, batch):
    """Each layer's output over the rows of x ([N, 1, 28, 28], normalised), by forward hooks on the
    eager demo model, run `batch` rows at a time as TorchScope batches them: a convolution rounds
    by the size of its batch (and by the thread count: give both sides the same), so the values
    equal the CLI's bit for bit."""
    model, grabbed = demo_model(), {layer: [] for layer in layers}
    modules = dict(model.named_modules())
    hooks = [modules[layer].register_forward_hook(lambda m, i, o, layer=layer: grabbed[layer].append(o.detach().clone()))
             for layer in layers]
    with torch.no_grad():
        for rows in x.split(batch):
            model(rows)
    for hook in hooks:
        hook.remove()
    return {layer: torch.cat(values) for layer, values in grabbed.items()}
