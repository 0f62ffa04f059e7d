"""The read side: snapshots of what a read needs, their cache, finished answers and their cache."""
