"""docs/cli.md against torchscope-cli's own --help: every command has a section
("## torchscope-cli COMMAND"), every option a command's --help shows has a row in that section's
table, and every option a section names anywhere is one its command's --help shows, so the
reference cannot go stale in either direction.

The commands come from `torchscope-cli --help` (and, for a command with subcommands such as probe,
from `torchscope-cli probe --help`); a command's options are the long names (--xxx) on its help's
option lines: a line that starts with a little whitespace and then "-x," or "--name" (CLI11 writes
"  -o,--out TEXT REQUIRED", "  --channels,--channel TEXT=0"). Continuation lines of a long option
are indented to the description column and are not read as options, nor is the footer's prose.

A section names an option when it appears in inline code (`--memory-mb`, `--target K`) outside
fenced blocks; it documents the option when the first cell of one of its table rows names it
(a row "| `--out`, `-o` | ..."; one cell may name several options). The section "Options of every
command that opens a model" is checked against every command whose usage line takes a model.
`--help`, which every command takes, is documented once, in the section of torchscope-cli itself.
"""
import concurrent.futures
import os
import pathlib
import re
import subprocess
import unittest

CLI = os.environ["TORCHSCOPE_CLI"]
ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "cli.md"
SHARED_SECTION = "Options of every command that opens a model"
EVERY_COMMAND = {"--help"}  # shown by every command; documented in the section of torchscope-cli itself
TIMEOUT = 60  # one --help; the sanitized CLI is several times slower

OPTION_LINE = re.compile(r"^[ \t]{1,8}(-[^\s,=]+(?:,-[^\s,=]+)*)(?:[\s=]|$)")
LONG_OPTION = re.compile(r"(?<![\w-])--[A-Za-z0-9][A-Za-z0-9_-]*")
HELP_HEADING = re.compile(r"^(\w[\w ]*):\s*$")
SUBCOMMAND_LINE = re.compile(r"^\s+([A-Za-z][\w-]*)(?:\s|$)")
DOC_HEADING = re.compile(r"^(#{1,2}) +(.*?) *#*\s*$")
COMMAND_HEADING = re.compile(r"^torchscope-cli((?: +[A-Za-z][\w-]*)*)$")
INLINE_CODE = re.compile(r"`([^`]+)`")


def name(command):
    return " ".join(("torchscope-cli",) + command)


def help_text(command):
    """What `torchscope-cli COMMAND... --help` prints; it must succeed."""
    done = subprocess.run(
        [CLI, *command, "--help"], capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise AssertionError(f"{name(command)} --help exited with {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def help_options(text):
    """The long options on a help text's option lines."""
    options = set()
    for line in text.splitlines():
        match = OPTION_LINE.match(line)
        if match:
            options.update(n for n in match.group(1).split(",") if n.startswith("--"))
    return options


def help_subcommands(text):
    """The names listed under a help text's "Subcommands:" heading (CLI11 2.4 writes it in capitals)."""
    names, listing = [], False
    for line in text.splitlines():
        heading = HELP_HEADING.match(line)
        if heading:
            listing = heading.group(1).strip().lower() == "subcommands"
            continue
        if not line.strip() or not line[0].isspace():
            listing = False
            continue
        match = SUBCOMMAND_LINE.match(line)
        if listing and match:
            names.append(match.group(1))
    return names


def takes_model(text):
    """Whether the help's usage line takes MODEL (CLI11: "Usage: torchscope-cli run [OPTIONS] [model]")."""
    usage = [line for line in text.splitlines() if line.lower().startswith("usage:")]
    return any(re.search(r"(?<![\w-])model(?![\w-])", line, re.IGNORECASE) for line in usage)


def command_tree():
    """Every command, as a tuple of words (() is torchscope-cli itself), with its --help text. The
    help texts of one level are asked for at once."""
    texts = {(): help_text(())}
    level = [()]
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        while level:
            children = [parent + (child,) for parent in level for child in help_subcommands(texts[parent])]
            for command, text in zip(children, pool.map(help_text, children)):
                texts[command] = text
            level = children
    return texts


def reference_sections(markdown):
    """Level-2 sections of the reference: {heading: the text between it and the next heading of
    level 1 or 2}, fenced blocks left out."""
    sections, heading, fenced = {}, None, False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        match = DOC_HEADING.match(line)
        if match:
            heading = match.group(2) if match.group(1) == "##" else None
            if heading is not None:
                if heading in sections:
                    raise AssertionError(f"{REFERENCE}: two sections '## {heading}'")
                sections[heading] = []
            continue
        if heading is not None:
            sections[heading].append(line)
    return {heading: "\n".join(lines) for heading, lines in sections.items()}


def named_options(section):
    """The long options a section names in inline code (a span may run over a line break)."""
    return {option for code in INLINE_CODE.findall(section) for option in LONG_OPTION.findall(code)}


def tabled_options(section):
    """The long options named in the first cell of the section's table rows."""
    options = set()
    for line in section.splitlines():
        cells = re.split(r"(?<!\\)\|", line.strip())
        if line.strip().startswith("|") and len(cells) > 2:
            options |= named_options(cells[1])
    return options


class CliReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.helps = command_tree()
        cls.options = {command: help_options(text) for command, text in cls.helps.items()}
        sections = reference_sections(REFERENCE.read_text(encoding="utf-8"))
        cls.documented, cls.tabled = {}, {}
        for heading, text in sections.items():
            match = COMMAND_HEADING.match(heading)
            if match:
                command = tuple(match.group(1).split())
                cls.documented[command] = named_options(text)
                cls.tabled[command] = tabled_options(text)
        cls.shared = named_options(sections[SHARED_SECTION]) if SHARED_SECTION in sections else None

    def fail_listing(self, what, items):
        if items:
            self.fail(what + ":\n  " + "\n  ".join(items))

    def test_help_is_read(self):
        # The parsing above found what any torchscope-cli has: commands, and options on each.
        self.assertIn(("run",), self.helps, "no 'run' among the commands of torchscope-cli --help")
        self.assertIn("--version", self.options[()], "torchscope-cli --help shows no --version")
        for command, options in self.options.items():
            self.assertIn("--help", options, f"no option lines read from {name(command)} --help")

    def test_every_command_has_a_section(self):
        missing = [name(c) for c in sorted(self.helps) if c not in self.documented]
        self.fail_listing(f"commands --help lists that have no section '## torchscope-cli ...' in {REFERENCE}", missing)

    def test_every_section_is_a_command(self):
        stale = [name(c) for c in sorted(self.documented) if c not in self.helps]
        self.fail_listing(f"sections of {REFERENCE} for commands that --help does not list", stale)

    def test_every_option_is_documented(self):
        missing = []
        for command, options in sorted(self.options.items()):
            if command not in self.documented:
                continue  # reported by test_every_command_has_a_section
            expected = options if command == () else options - EVERY_COMMAND
            missing += [f"{name(command)} {o}" for o in sorted(expected - self.tabled[command])]
        self.fail_listing(f"options --help shows that have no row in the command's table in {REFERENCE}", missing)

    def test_every_documented_option_exists(self):
        stale = []
        for command, named in sorted(self.documented.items()):
            if command in self.options:
                stale += [f"{name(command)} {o}" for o in sorted(named - self.options[command])]
        self.fail_listing(f"options named in a command's section of {REFERENCE} that its --help does not show", stale)

    def test_shared_options(self):
        self.assertIsNotNone(self.shared, f"{REFERENCE} has no section '## {SHARED_SECTION}'")
        self.assertTrue(self.shared, f"'## {SHARED_SECTION}' names no option")
        model_commands = [c for c, text in self.helps.items() if takes_model(text)]
        self.assertTrue(model_commands, "no command's usage line takes a model: the usage lines were not read")
        stale = [f"{name(c)} {o}" for c in sorted(model_commands) for o in sorted(self.shared - self.options[c])]
        self.fail_listing(f"options of '## {SHARED_SECTION}' that a command taking a model does not show", stale)


if __name__ == "__main__":
    unittest.main()


class AnalysisTable(unittest.TestCase):
    """`torchscope-cli analyses`, the table of analyses the window and the commands read, against
    docs/core_operations.md (which holds it verbatim) and against the commands that exist."""

    OPERATIONS = ROOT / "docs" / "core_operations.md"
    START, END = "<!-- torchscope-cli analyses -->\n", "<!-- end of torchscope-cli analyses -->"

    @classmethod
    def setUpClass(cls):
        cls.markdown = subprocess.run([CLI, "analyses"], capture_output=True, text=True, timeout=TIMEOUT,
                                      stdin=subprocess.DEVNULL, check=True).stdout
        import json
        cls.rows = json.loads(subprocess.run([CLI, "analyses", "--json"], capture_output=True, text=True,
                                             timeout=TIMEOUT, stdin=subprocess.DEVNULL, check=True).stdout)

    def test_the_docs_hold_the_table(self):
        page = self.OPERATIONS.read_text()
        self.assertIn(self.START, page)
        held = page.split(self.START, 1)[1].split(self.END, 1)[0]
        self.assertEqual(held, self.markdown,
                         "docs/core_operations.md differs from `torchscope-cli analyses`: paste its output "
                         "between the markers")

    def test_rows_name_commands_that_exist(self):
        commands = {" ".join(command) for command in command_tree()}
        names = [row["name"] for row in self.rows]
        self.assertEqual(len(names), len(set(names)))
        self.assertGreaterEqual(len(names), 15)
        for row in self.rows:
            with self.subTest(analysis=row["name"]):
                self.assertIn(row["lane"], ("interactive", "batch"))
                self.assertTrue(row["commands"])
                for command in row["commands"]:
                    self.assertIn(command, commands)
                self.assertTrue((ROOT / row["room"]).is_dir(), row["room"])

    def test_method_and_metric_names_are_the_commands_choices(self):
        """The attribution commands refuse what the table does not list and take what it does."""
        attribute = next(row for row in self.rows if row["name"] == "attribute")
        evaluate = next(row for row in self.rows if row["name"] == "evaluate")
        attribute_help = help_text(("attribute",))
        for method in attribute["methods"]:
            self.assertIn(method, attribute_help)
        for metric in evaluate["metrics"]:
            self.assertIn(metric, help_text(("evaluate",)))
        wrong = subprocess.run([CLI, "attribute", "--input", "x.png", "--method", "not_a_method", "--out", "x.pt"],
                               capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        self.assertEqual(wrong.returncode, 2)
        self.assertIn("not_a_method", wrong.stderr)
