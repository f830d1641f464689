"""What the controller asks a box before it deploys: its release, its binary's flags, what it serves
now, and the pre-flight checks."""
