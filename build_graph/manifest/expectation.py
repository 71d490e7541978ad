"""What a tier must satisfy: its verify settings merged down the tier chain, with the GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from build_graph.manifest.model import VariantSpec, VerifySpec

if TYPE_CHECKING:
    from build_graph.oci.layer_limits import LayerLimit

GpuPolicy = Literal["required", "optional"]
# A GPU image is called verified only once a kernel really ran: "not checked" is never a
# pass. A team without GPU runners opts out per tier with verify.gpu = "optional".
DEFAULT_GPU_POLICY: GpuPolicy = "required"


@dataclass(frozen=True)
class Expectation:
    """A tier's checks merged with its ancestors' (the child's own settings win)."""

    python: str | None
    conda: bool
    single_python: bool
    pip_check: bool
    packages: dict[str, str]
    cuda: str | None  # major.minor torch must report, when torch is in the image
    archs: list[str] = field(default_factory=list)  # promised SASS archs, e.g. ['8.0', '9.0']
    max_size_bytes: int | None = None
    smoke: tuple[str, ...] = ()
    ptx: list[str] = field(default_factory=list)  # promised PTX archs
    targets: list[tuple[str, tuple[int, int]]] = field(default_factory=list)
    libraries: tuple[str, ...] = ()  # globs of CUDA libraries to read, besides torch/lib
    torch_archs: bool = True  # torch's arch list and torch/lib/*.so are held to the promise
    gpu_policy: GpuPolicy = DEFAULT_GPU_POLICY
    # 'linux/arm64' for one platform's image of a tier built per platform: its config must
    # say so and its code run as that machine (None: the build host's, not checked)
    platform: str | None = None
    machine: str | None = None  # what `uname -m` says in it ('aarch64'), with `platform`
    pip_check_allow: tuple[str, ...] = ()  # normalized names whose pip check lines pass
    # (name, version) of every distribution the tier's and its ancestors' Python locks hold:
    # installed at exactly that version, and nothing else installed from the index
    locked: tuple[tuple[str, str], ...] = ()
    # (name, version, architecture) of every package the tier's and its ancestors' apt locks
    # hold: installed at exactly that version (a stack that locks apt)
    apt_locked: tuple[tuple[str, str, str], ...] = ()
    # the largest compressed layer the stack's registry takes ([layers] max_size or its
    # known limit); None: no limit
    max_layer: LayerLimit | None = None

    @property
    def wants_gpu(self) -> bool:
        """Whether this tier promises device code, so a GPU launch applies."""
        return bool(self.archs)


def expectation_for(variant: VariantSpec, tier: str) -> Expectation:
    """The merged checks of `tier` and its ancestors (the image tree is the data)."""
    chain = [variant.tier(tier)]
    while chain[0].parent is not None:
        chain.insert(0, variant.tier(chain[0].parent))
    return expectation([t.verify for t in chain], variant)


def expectation(chain: list[VerifySpec], variant: VariantSpec) -> Expectation:
    """Merge specs from the root ancestor down to the tier itself (last in `chain`)."""
    from packaging.utils import canonicalize_name  # planning only: a no-op reads the plan

    from build_graph.gpu.archs import parse_target, split_arch_list

    own = chain[-1]
    packages: dict[str, str] = {}
    for spec in chain:
        packages.update(dict(spec.packages))
    cuda = variant.versions.get("cuda")
    sass, ptx = split_arch_list(list(variant.gpu.arch_list), variant.gpu.ptx)
    checked = own.archs and bool(sass)
    targets = [(t, parse_target(t)) for t in variant.gpu.targets] if checked else []
    policy = next((s.gpu for s in reversed(chain) if s.gpu), DEFAULT_GPU_POLICY)
    return Expectation(
        python=next((s.python for s in reversed(chain) if s.python), None),
        conda=own.conda,
        single_python=own.single_python,
        pip_check=own.pip_check,
        packages=packages,
        cuda=".".join(cuda.split(".")[:2]) if cuda else None,
        archs=[str(a) for a in sass] if checked else [],
        ptx=[str(a) for a in ptx] if checked else [],
        targets=targets,
        libraries=tuple(g for spec in chain for g in spec.cuda_libraries),
        torch_archs=all(spec.torch_archs for spec in chain),
        max_size_bytes=next((s.max_size_bytes for s in reversed(chain) if s.max_size_bytes), None),
        smoke=tuple(cmd for spec in chain for cmd in spec.smoke),
        gpu_policy="optional" if policy == "optional" else "required",
        pip_check_allow=tuple(
            sorted({canonicalize_name(n) for s in chain for n in s.pip_check_allow})
        ),
    )
