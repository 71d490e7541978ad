"""The team's training entry point (a stand-in: one step on the GPU when there is one)."""

import sys

import torch


def main(argv: list[str]) -> int:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Linear(16, 4).to(device)
    loss = model(torch.randn(8, 16, device=device)).pow(2).mean()
    loss.backward()
    print(f"torch {torch.__version__} on {device}: one step, loss {loss.item():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
