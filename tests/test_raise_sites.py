"""tests/support/raise_sites.py finds and renders the messages a source file raises (the base of the zh_CN
message-coverage tests, which would pass vacuously if it found nothing)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import cosydesk
from tests.support.raise_sites import (assigned_sites, call_sites, literal_text, python_files, raise_sites,
                                        returned_sites)

SOURCE = textwrap.dedent('''
    def f(path, n, error):
        if n:
            raise ValueError(f"{path!r} has {n:,} rows, more than " + str(n) + " allowed")
        raise OSError("cannot read %s (%d bytes)" % (path, n))
        raise KeyError("unknown {} in {name}".format(n, name=path))
        raise RuntimeError(
            "a message over "
            "two lines"
        ) from error
        raise ValueError(error)
        raise ProfileError([f"there is no voice called {path!r}", "give it a name"])
        raise
        return Check("torch", "FAIL", f"cannot import torch ({error})", fix="pip install torch")

    def g(reason):
        missing = "not installed" if reason else f"not importable ({reason})"
        missing += f"; kept as {reason}"
        return f"re-copy {reason} from its source"
''')


def test_raise_sites_renders_every_kind_of_message(tmp_path):
    source = tmp_path / "module.py"
    source.write_text(SOURCE, encoding="utf-8")
    sites = list(raise_sites([source]))
    assert [(site.line, site.call, site.template) for site in sites] == [
        (4, "ValueError", "{0} has {1} rows, more than {2} allowed"),
        (5, "OSError", "cannot read {0} ({1} bytes)"),
        (6, "KeyError", "unknown {0} in {1}"),
        (8, "RuntimeError", "a message over two lines"),
        (12, "ProfileError", "there is no voice called {0}"),
        (12, "ProfileError", "give it a name"),
    ]
    assert sites[0].sample == "‹0› has ‹1› rows, more than ‹2› allowed"
    assert literal_text(sites[0].template).split() == ["has", "rows,", "more", "than", "allowed"]
    checks = list(call_sites([source], {"Check": (0, 2, 3, "fix")}))
    assert [site.template for site in checks] == ["torch", "cannot import torch ({0})", "pip install torch"]
    assert [site.template for site in assigned_sites([source], {"missing"})] == ["not installed",
                                                                                 "not importable ({0})",
                                                                                 "{0}; kept as {1}"]
    assert [site.template for site in returned_sites([source], {"g"})] == ["re-copy {0} from its source"]


def test_raise_sites_finds_the_package_messages():
    package = Path(cosydesk.__file__).parent
    files = python_files(package / "runtime", exclude=("tensorrt",))
    assert files and not any("tensorrt" in path.parts for path in files)
    sites = list(raise_sites(files))
    assert len(sites) > 30
    assert any(site.template == "precision {0} is not one of auto, fp32, fp16" for site in sites)
