"""A stand-in training entry point: proves the stack's layers work together."""

import sys

import teamlib


def main(argv: list[str]) -> int:
    steps = int(argv[0]) if argv else 3
    for step in range(steps):
        print(f"step {step}: fingerprint={teamlib.fingerprint(str(step).encode())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
