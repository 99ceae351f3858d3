"""The config lookup (core/base/config_lookup.h) as a person sees it: the config
`vigil` names in its "no engine" hint, which is the one `vigil mcp` gives the
engine it starts. In order: $VIGIL_CONFIG, then
$XDG_CONFIG_HOME/vigil/vigil.lua (else ~/.config/vigil/vigil.lua), then the
bundled config/vigil.lua of the source tree this build came from."""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from vigiltest import VIGIL, run_plain_tests

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUNDLED = os.path.join(ROOT, "config", "vigil.lua")


def hint(tmp, cwd=None, **env_extra):
    """The config the no-engine hint names, and the hint's text."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIGIL_CONFIG", "XDG_CONFIG_HOME", "VIGIL_DATA_DIR", "VIGIL_SESSION")}
    env["HOME"] = os.path.join(tmp, "home")
    env.update(env_extra)
    r = subprocess.run([VIGIL, "--socket", os.path.join(tmp, "none.sock"), "list"],
                       capture_output=True, text=True, timeout=30, env=env, cwd=cwd or tmp)
    assert r.returncode != 0 and re.search(r"start one with: \S+ --daemon --listen \S+$",
                                           r.stderr, re.M), r.stderr
    m = (re.search(r"\(it will use the config (\S+): ", r.stderr) or
         re.search(r"\(no config found: until you write (\S+),", r.stderr))
    assert m, r.stderr
    return m.group(1), r.stderr


def write(path, text="return {}\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_the_lookup_goes_vigil_config_then_xdg_then_home_then_bundled(tmp):
    # Nothing of the user's: the bundled config, said so.
    path, text = hint(tmp)
    assert path == BUNDLED and "%s: the bundled config;" % BUNDLED in text, text
    # ~/.config/vigil/vigil.lua wins over the bundled one.
    home_cfg = write(os.path.join(tmp, "home", ".config", "vigil", "vigil.lua"))
    path, text = hint(tmp)
    assert path == home_cfg and "the user's config" in text, text
    # $XDG_CONFIG_HOME, when set, is where the user's config is.
    xdg_cfg = write(os.path.join(tmp, "xdg", "vigil", "vigil.lua"))
    path, _ = hint(tmp, XDG_CONFIG_HOME=os.path.join(tmp, "xdg"))
    assert path == xdg_cfg, path
    # A relative XDG_CONFIG_HOME is ignored (the XDG spec): ~/.config again.
    path, _ = hint(tmp, XDG_CONFIG_HOME="xdg")
    assert path == home_cfg, path
    # $VIGIL_CONFIG wins over everything, made absolute, and is taken as
    # given even when the file is not there (its reader names it then).
    named = write(os.path.join(tmp, "named.lua"))
    path, text = hint(tmp, VIGIL_CONFIG=named, XDG_CONFIG_HOME=os.path.join(tmp, "xdg"))
    assert path == named and "$VIGIL_CONFIG" in text, text
    path, _ = hint(tmp, VIGIL_CONFIG="named.lua")
    assert path == named, path
    path, _ = hint(tmp, VIGIL_CONFIG=os.path.join(tmp, "missing.lua"))
    assert path == os.path.join(tmp, "missing.lua"), path
    # An empty $VIGIL_CONFIG counts as unset.
    path, _ = hint(tmp, VIGIL_CONFIG="")
    assert path == home_cfg, path


def test_with_nothing_found_the_hint_names_the_file_to_write(tmp):
    # A data directory without a bundled config, and no user config.
    os.makedirs(os.path.join(tmp, "data", "plugins"))
    path, text = hint(tmp, VIGIL_DATA_DIR=os.path.join(tmp, "data"))
    assert path == os.path.join(tmp, "home", ".config", "vigil", "vigil.lua"), path
    assert "no config found: until you write %s, set VIGIL_CONFIG" % path in text, text
    # The install layout: share/vigil/vigil.lua beside plugins/.
    installed = write(os.path.join(tmp, "data", "vigil.lua"))
    path, text = hint(tmp, VIGIL_DATA_DIR=os.path.join(tmp, "data"))
    assert path == installed and "the bundled config" in text, text


if __name__ == "__main__":
    sys.exit(run_plain_tests([
        test_the_lookup_goes_vigil_config_then_xdg_then_home_then_bundled,
        test_with_nothing_found_the_hint_names_the_file_to_write,
    ]))
