"""Reports for people: the pyramid summary in the terminal."""
