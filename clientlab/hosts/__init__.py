"""The lab's other machines: the hosts file, SSH to them with checked host keys, what each says
about itself (`clientlab hosts check`).

Kept free of imports: a host runs `python -m clientlab.hosts.facts` from its checkout, and that
must work with the host's plain python3 too."""
