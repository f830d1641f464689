"""The console's panes, each drawing one view model from ``specconsole.ui.viewmodels``."""
