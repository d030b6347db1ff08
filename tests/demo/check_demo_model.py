"""The bundled demo model, checked from Python: it loads with torch.jit.load, carries its model
card, and reaches the promised accuracy on Fashion-MNIST's 10,000 test images."""
import json
import pathlib
import sys
import unittest

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "resources" / "demo" / "fashion_cnn.pt"
sys.path.insert(0, str(ROOT / "scripts"))
from train_demo_model import read_idx  # noqa: E402  (the dataset reader, not the model code)


class DemoModel(unittest.TestCase):
    def test_card_and_accuracy(self):
        extra = {"torchscope.json": ""}
        model = torch.jit.load(str(MODEL), _extra_files=extra)
        card = json.loads(extra["torchscope.json"])
        self.assertEqual(len(card["labels"]), 10)
        pre = card["preprocess"]
        images = torch.from_numpy(read_idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0).unsqueeze(1)
        labels = torch.from_numpy(read_idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
        x = (images - pre["mean"][0]) / pre["std"][0]
        with torch.no_grad():
            predicted = torch.cat([model(x[i:i + 1000]).argmax(1) for i in range(0, len(x), 1000)])
        accuracy = (predicted == labels).float().mean().item()
        print(f"demo model test accuracy: {accuracy:.4f}")
        self.assertGreaterEqual(accuracy, 0.88)


if __name__ == "__main__":
    unittest.main()
