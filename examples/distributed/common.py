"""What both distributed examples do first: the --device option, then the
world group (the launcher's backend; the group of one when started alone)."""

import cmx.core as mx


def parse_and_init(ap, argv=None):
    """(args, world, rank, size) after parsing ap's options plus --device
    and making the world group."""
    ap.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    args = ap.parse_args(argv)
    if args.device != "auto":
        mx.set_default_device(mx.gpu if args.device == "gpu" else mx.cpu)
    world = mx.distributed.init()
    return args, world, world.rank(), world.size()
