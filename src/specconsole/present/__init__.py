"""How core data reads to a person: one home for every human-facing rendering.

The console (``specconsole.ui``), the headless printer (``specconsole.headless``)
and the session reports (``specconsole.session.reports.report``) all show the same things — a
trial's
label, its status, tok/s figures, the keys that apply now — so each is written once here and
the three front ends only lay it out. Nothing here imports Textual or Rich (an import-linter
contract enforces it), so every rendering is a plain function unit-tested on its own.

* ``formats``: numbers (tok/s, ms, counts, ratios, durations).
* ``labels``: the one table of field abbreviations, configuration labels and summaries.
* ``status``: trial status words and their detailed text (new statuses plug in here).
* ``columns``: the trials table's columns (console and report; new columns plug in here).
* ``keymap``: the key table — every key, where and when it applies, what it does; the
  bindings, the footer and the help are generated from it.
* ``keys``: which keys apply now, derived from ``core.machine.intents.legal_intents`` and the
  pending decision's choices; ``footer``: which of them fit the footer, ``?`` and ``q`` first;
  ``help``: the help page laid out for a width; ``symbols``: the marks and what they mean.
* ``actions``: what a key would deploy and the confirmations of the keys that change the
  box; ``crashtext``: a crash's cause in words, the fix on the swept axis, the banner's rows,
  the editor's capacity line; ``notices``: which controller notices the message line shows.
* ``flagdiff`` and ``diffrows``: a deploy's change flag by flag, and a diff laid out for a
  width with its gutters; ``runlog``: the headless run's level lines, deploy summary and
  final verdict.
* ``repeats``: repeated benchmarks' means, standard deviations and confidence intervals.
* ``series``: chart series, colours and markers shared by the console and report charts.
"""
