"""The console's keys in words: the keymap, which key applies when and why not, the footer and the
help screen."""
