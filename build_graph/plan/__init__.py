"""Stack -> planned tiers: rendered files, file lists, content hashes, image names.

No Docker, no network: a plan is a function of the manifest, its lock, its templates and
its files. May import the layers below it: manifest, pylock, aptlock, gpu, oci, signing
and the ground modules.
"""
