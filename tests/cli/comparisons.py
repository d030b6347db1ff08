"""The difference helpers of the CLI tests: NaN or infinity on either side fails, whatever the
tolerance (Python's max() would skip a NaN)."""
import torch


def max_diff(a, b):
    """The largest absolute difference."""
    a, b = torch.as_tensor(a).double(), torch.as_tensor(b).double()
    if a.shape != b.shape:
        raise AssertionError(f"shapes differ: {tuple(a.shape)} and {tuple(b.shape)}")
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        raise AssertionError(f"non-finite values: {int((~torch.isfinite(a)).sum())} in the result, "
                             f"{int((~torch.isfinite(b)).sum())} expected")
    return (a - b).abs().max().item() if a.numel() else 0.0


def relative_diff(ours, expected):
    """max |ours - expected| / max |expected|."""
    return max_diff(ours, expected) / max(torch.as_tensor(expected).double().abs().max().item(), 1e-30)
