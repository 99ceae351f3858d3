"""The package as a user gets it: installed with pip, without network
(``pip install --target DIR --no-index --no-deps --no-build-isolation``,
Debian's pip, setuptools and msgpack), imported from there, and README.md's
example run with that copy against the build's vigild."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from support import BUILD, PACKAGE_ROOT, PYTHON, ROOT

# How long pip may take to build and install the package on a loaded machine.
PIP_TIMEOUT_S = 300
EXAMPLE_TIMEOUT_S = 120


def readme_example() -> str:
    """The first python block of README.md's "Example" section."""
    with open(os.path.join(PACKAGE_ROOT, "README.md")) as f:
        text = f.read()
    section = text.split("\n## Example\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


class Install(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="vigil-py-install-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        # pip builds in the source tree (build/, *.egg-info); a copy keeps
        # the checkout clean and two runs at once apart.
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(PACKAGE_ROOT, self.src,
                        ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
        self.target = os.path.join(self.tmp, "site")
        # Only the installed copy and Debian's site-packages: no checkout
        # on the path, no user site, no pip configuration of this machine.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
        self.env.update(PYTHONPATH=self.target, PYTHONNOUSERSITE="1", PIP_CONFIG_FILE=os.devnull)

    def pip_install(self):
        p = subprocess.run([PYTHON, "-m", "pip", "install", "--target", self.target, "--no-index",
                            "--no-deps", "--no-build-isolation", "--no-cache-dir",
                            "--disable-pip-version-check", "--quiet", self.src],
                           cwd=self.tmp, env=self.env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=PIP_TIMEOUT_S)
        self.assertEqual(p.returncode, 0, p.stdout.decode(errors="replace"))

    def test_pip_install_then_import_and_run_the_readme_example(self):
        self.pip_install()
        p = subprocess.run([PYTHON, "-c", "import vigil_client, os; print(vigil_client.__file__); "
                            "print(os.path.exists(os.path.join(os.path.dirname("
                            "vigil_client.__file__), 'py.typed')))"],
                           cwd=self.tmp, env=self.env, stdout=subprocess.PIPE, check=True)
        where, typed = p.stdout.decode().split()
        self.assertEqual(os.path.dirname(os.path.dirname(where)), self.target)
        self.assertEqual(typed, "True", "py.typed was not installed")

        # README.md's example, as written, with the installed package and
        # the build's vigild found on PATH.
        example = os.path.join(self.tmp, "example.py")
        with open(example, "w") as f:
            f.write(readme_example())
        env = dict(self.env, PATH=BUILD + os.pathsep + os.environ.get("PATH", ""))
        env.pop("VIGIL_VIGILD", None)
        p = subprocess.run([PYTHON, example], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=EXAMPLE_TIMEOUT_S)
        out = p.stdout.decode(errors="replace")
        report = "--- stdout ---\n%s\n--- stderr ---\n%s" % (out, p.stderr.decode(errors="replace")[-3000:])
        self.assertEqual(p.returncode, 0, report)
        self.assertRegex(out, r"(?m)^1 output build$", report)
        self.assertRegex(out, r"(?m)^\[stdout seq=2\] Error: out of cheese$", report)
        self.assertRegex(out, r"(?m)^2 exit build$", report)
        self.assertIn("status: exited with code 0", out, report)
        # The embedded engine says nothing around the example's output but
        # its one warning (it printed nine info lines before).
        self.assertNotRegex(p.stderr.decode(errors="replace"), r" vigild info ", report)

    def test_a_python_without_msgpack_is_told_how_to_get_it(self):
        # -S: no site directories, so not Debian's msgpack either: a Python
        # from elsewhere that has none.
        p = subprocess.run([PYTHON, "-S", "-c", "import sys; sys.path.insert(0, %r); "
                            "import vigil_client" % PACKAGE_ROOT],
                           env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=EXAMPLE_TIMEOUT_S)
        err = p.stderr.decode(errors="replace")
        self.assertNotEqual(p.returncode, 0, err)
        self.assertIn("vigil_client needs msgpack", err)
        self.assertIn("-m pip install msgpack", err)
        self.assertIn("python3-msgpack", err)


if __name__ == "__main__":
    unittest.main()
