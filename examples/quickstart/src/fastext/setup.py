"""fastext: a C++ extension with enough translation units to make a compiler cache matter.

The kernel units are generated (deterministically) from csrc/kernel_body.hpp, one per
KERNEL_ID; FASTEXT_KERNELS sets how many (default 8: about 40 s cold on 2 cores).
"""

import os
from pathlib import Path

from setuptools import Extension, setup

here = Path(__file__).parent
count = int(os.environ.get("FASTEXT_KERNELS", "8"))
gen = here / "gen"


def write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


gen.mkdir(exist_ok=True)
for k in range(count):
    write_if_changed(gen / f"kernel_{k:02d}.cpp", f'#define KERNEL_ID {k}\n#include "kernel_body.hpp"\n')
decls = "".join(f"std::uint64_t fastext_kernel_{k}(const unsigned char*, std::size_t);\n" for k in range(count))
table = ", ".join(f"fastext_kernel_{k}" for k in range(count))
write_if_changed(
    gen / "kernels.h",
    "#pragma once\n#include <cstddef>\n#include <cstdint>\n"
    f'extern "C" {{\n{decls}}}\n'
    f"static std::uint64_t (*const fastext_kernels[])(const unsigned char*, std::size_t) = {{{table}}};\n",
)

sources = ["csrc/module.cpp"] + [f"gen/kernel_{k:02d}.cpp" for k in range(count)]

setup(
    name="fastext",
    version="1.0.0",
    packages=["fastext"],
    ext_modules=[
        Extension(
            "fastext._native",
            sources=sources,
            include_dirs=["csrc", "gen"],
            extra_compile_args=["-O2", "-std=c++17"],
            language="c++",
        )
    ],
)
