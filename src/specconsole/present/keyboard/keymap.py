"""The key table: every key of the console, where it works, when it applies, what it does.

Why one table: the screens' bindings, the footer (``present.keyboard.footer``), the crash banner and
the help screen (``present.keyboard.help``) are all generated from it, so a key documented is a key
bound, and the help can never list a key twice or miss one. ``COMMANDS`` are the
state-dependent keys of the main screen (``present.keyboard.keys.available`` says which apply now);
``SCREEN_KEYS`` are the keys that always work on the main screen; ``SECTION_KEYS`` the keys
of the panes, the diff pane, the editor and the dialogs. Nothing here imports Textual: the
console turns ``Key.binding`` and ``Key.id`` into ``Binding`` objects.

Key changes from earlier releases are documented in docs/console.md: skip after a crash is
``S`` (``k`` now moves up in the trials table and the journal, as in vim, lazygit, k9s),
and the quit dialog stops the server with ``s`` (``x`` cancels a trial on the main screen).
"""

from __future__ import annotations

from dataclasses import dataclass

MAIN = "Main screen"
CRASH = "After a crash"
PANES = "Panes"
JOURNAL = "Journal"
TRIALS = "Trials table"
DIFF = "Diff pane (v)"
EDITOR = "Parameter editor (e)"
DIALOGS = "Dialogs"

SECTIONS: tuple[str, ...] = (MAIN, CRASH, PANES, JOURNAL, TRIALS, DIFF, EDITOR, DIALOGS)
"""The help screen's sections, in order."""


@dataclass(frozen=True, slots=True)
class Key:
    """One key (or key group) and what it does in one state."""

    id: str
    """Binding id; for ``COMMANDS`` also the command id ``available`` returns."""
    binding: str
    """Textual key names, comma-separated (``escape,v,q``)."""
    label: str
    """The footer's short label."""
    does: str
    """The help's sentence."""
    when: str = ""
    """The state it applies in (help's second column); empty: always."""
    section: str = MAIN
    confirm: bool = False
    """Changes the box in a way that throws something away: asks once, naming the target."""
    pool_only: bool = False
    """Only on a pool of boxes (``[[hosts]]``): left out of the help otherwise."""

    @property
    def key(self) -> str:
        """The first key as people write it (``?`` for ``question_mark``)."""
        return key_label(self.binding.split(",")[0])

    @property
    def keys(self) -> str:
        """Every key as people write them, space-separated (``esc v q``)."""
        return key_label(self.binding)


KEY_NAMES: dict[str, str] = {
    "slash": "/",
    "question_mark": "?",
    "escape": "esc",
    "left": "←",
    "right": "→",
    "up": "↑",
    "down": "↓",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
    "shift+tab": "⇧tab",
}
"""How Textual's key names are written for people."""


def key_label(binding: str) -> str:
    """``esc v q`` for ``escape,v,q``."""
    return " ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in binding.split(","))


COMMANDS: tuple[Key, ...] = (
    Key(
        "deploy",
        "d",
        "deploy",
        "deploy the header's configuration as the next trial (asks first, naming it)",
        "nothing runs",
        confirm=True,
    ),
    Key("bench", "b", "bench", "benchmark what is deployed (no deploy, no restart)", "it serves"),
    Key("sweep", "s", "sweep", "start the plan's sweep", "plan, no sweep"),
    Key("pause", "s", "pause", "pause the sweep after this trial", "sweep running"),
    Key("unpause", "s", "don't pause", "withdraw the pause: the sweep goes on", "pausing"),
    Key("continue", "s", "continue", "continue with the next planned trial", "sweep paused"),
    Key(
        "edit",
        "e",
        "edit",
        "edit the launch parameters; ctrl+s deploys them as the next trial (queued while a "
        "trial runs)",
    ),
    Key(
        "resume",
        "r",
        "resume",
        "deploy the next planned trial (the banner names it)",
        "crash or pause",
        CRASH,
    ),
    Key("retry", "t", "retry", "deploy the crashed configuration again", "crash", CRASH),
    Key(
        "skip",
        "S",
        "skip",
        "skip the next planned trial, deploy the one after (asks first)",
        "crash",
        CRASH,
        confirm=True,
    ),
    Key(
        "rollback",
        "o",
        "roll back",
        "redeploy the last configuration that loaded (asks first)",
        "crash",
        CRASH,
        confirm=True,
    ),
    Key("crash-details", "c", "details", "the whole crash report", "crash", CRASH),
    Key(
        "cancel",
        "x",
        "cancel trial",
        "cancel the running trial, which it names (asks first; the server is left as it is)",
        "a trial runs",
        confirm=True,
    ),
)
"""Keys whose availability depends on the controller's state, in footer order."""

HELP = Key("help", "question_mark", "help", "this help (esc closes)")
QUIT = Key(
    "quit",
    "q",
    "quit",
    "leave; asks while a trial runs (the server keeps running unless you choose to stop it); "
    "after a finished sweep carries out [sweep] finally first (q again quits at once)",
)
FOLLOW = Key("follow", "f", "follow", "follow the log / pause it where you are reading")
SEARCH = Key("search", "slash", "search", "show only log lines containing a word (esc clears)")
DIFF_KEY = Key(
    "diff",
    "v",
    "diff",
    "what each deploy changed on the box: flags first, then the unit/command diff (the trial "
    "selected in the trials table)",
)
NEXT_BOX = Key("next-box", "n", "next box", "show the next box", "pool", pool_only=True)

PINNED: tuple[Key, ...] = (HELP, QUIT)
"""Always first in the footer, whatever else is cut at 80 columns."""

SCREEN_KEYS: tuple[Key, ...] = (HELP, QUIT, FOLLOW, SEARCH, DIFF_KEY, NEXT_BOX)
"""Main-screen keys that work in every state (the footer shows them after the commands)."""

PANE_KEYS: tuple[Key, ...] = (
    Key("pane-journal", "1", "journal", "show (80×24) or focus the journal", section=PANES),
    Key(
        "pane-side",
        "2",
        "bench",
        "show (80×24) or focus the benchmark panel and charts",
        section=PANES,
    ),
    Key("pane-trials", "3", "trials", "show (80×24) or focus the trials table", section=PANES),
    Key("focus-next", "tab", "next pane", "focus the next pane", section=PANES),
)
"""Switching panes (shown in the footer only in the stacked layout, as ``1-3 panes``)."""

SECTION_KEYS: tuple[Key, ...] = (
    Key("scroll", "up,down,k,j", "scroll", "scroll one line (k up, j down)", section=JOURNAL),
    Key(
        "page",
        "pageup,pagedown",
        "page",
        "scroll by page (scrolling back pauses following; f follows again)",
        section=JOURNAL,
    ),
    Key("ends", "home,end", "ends", "to the first / the last line", section=JOURNAL),
    Key(
        "keep-search",
        "enter",
        "keep",
        "keep the search and go back to the log",
        "searching",
        JOURNAL,
    ),
    Key("clear-search", "escape", "clear", "clear the search", "searching", JOURNAL),
    Key(
        "row", "up,down,k,j", "move", "select a trial (its details show beside it)", section=TRIALS
    ),
    Key(
        "columns",
        "left,right,h,l",
        "columns",
        "show the columns cut at this width (marked +N cols →)",
        "columns cut",
        TRIALS,
    ),
    Key("diff-trial", "v", "diff", "the selected trial's diff", section=TRIALS),
    Key("diff-step", "left,right", "other trial", "newer / older trial's diff", section=DIFF),
    Key("diff-scroll", "up,down", "scroll", "scroll the diff", section=DIFF),
    Key("diff-close", "escape,v,q", "close", "close the diff pane", section=DIFF),
    Key(
        "apply",
        "ctrl+s",
        "apply",
        "deploy as the next trial; while a trial runs: queue it for after that trial",
        section=EDITOR,
    ),
    Key(
        "cancel-edit",
        "escape",
        "close",
        "close (asks first when you changed a field)",
        section=EDITOR,
    ),
    Key(
        "suggest",
        "ctrl+n",
        "suggest",
        "fill in the plan's next trial (else the optimiser's proposal), with its reason",
        section=EDITOR,
    ),
    Key(
        "revert", "ctrl+r", "revert", "put back the deployed configuration's values", section=EDITOR
    ),
    Key("fields", "tab,shift+tab", "fields", "next / previous field", section=EDITOR),
    Key("confirm-yes", "enter,y", "yes", "do what the dialog names", "confirm", DIALOGS),
    Key("confirm-no", "escape,n", "no", "cancel: nothing changes on the box", "confirm", DIALOGS),
    Key("quit-leave", "q,y", "quit", "quit, the server keeps running", "quit?", DIALOGS),
    Key("quit-stop", "s", "stop + quit", "stop the server, then quit", "quit?", DIALOGS),
    Key("quit-stay", "escape,n", "stay", "stay in the console", "quit?", DIALOGS),
    Key(
        "crash-choice",
        "r,t,e,S,o",
        "decide",
        "the same choices as the banner",
        "crash report",
        DIALOGS,
    ),
    Key("crash-back", "escape,c", "back", "back to the banner", "crash report", DIALOGS),
)
"""Keys of the panes, the diff pane, the editor and the dialogs (help only; each screen
binds its own)."""

BY_ID: dict[str, Key] = {k.id: k for k in (*COMMANDS, *SCREEN_KEYS, *PANE_KEYS, *SECTION_KEYS)}
"""Every key by id."""


def command(command_id: str) -> Key:
    """The state-dependent command ``command_id``."""
    return BY_ID[command_id]
