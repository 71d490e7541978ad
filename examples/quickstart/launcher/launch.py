"""The runner's entry point: starts the training script with the arguments it was given."""

import runpy
import sys

if __name__ == "__main__":
    sys.argv = ["train.py", *sys.argv[1:]]
    runpy.run_path("/workspace/train/train.py", run_name="__main__")
