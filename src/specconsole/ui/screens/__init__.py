"""The console's screens: the main screen and its modal dialogs (editor, crash, help, quit)."""
