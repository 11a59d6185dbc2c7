"""mx.fast.gated_delta_update: the gated delta rule (Qwen3-Next's linear
attention) as MLX computes it, composed from cmx ops so that it runs on
every device and every transform (grad, vjp, jvp, vmap, compile) goes
through it.

For each step t, head h of v (query/key head h // (Hv // Hk), as MLX
repeats them), in float32 with the state S (Dv, Dk):

    S   = S * gamma[t, h]                  (per key feature when gamma
                                            has a last axis of Dk)
    S   = S + ((v[t, h] - S k[t]) * beta[t, h]) outer k[t]
    y_t = S q[t]

A step whose mask is False (0) outputs zeros and leaves S as it was.
"""

_OP = "gated_delta_update"


def _err(msg):
    return ValueError(f"[{_OP}] {msg}")


def _shape(a):
    return "(" + ",".join(str(d) for d in a.shape) + ")"


def install(core, fast):
    mx = core

    def _arr(x, name):
        if isinstance(x, mx.array):
            return x
        try:
            return mx.array(x)
        except Exception as e:  # noqa: BLE001 - MLX raises TypeError here
            raise TypeError(f"[{_OP}] {name} must be an array") from e

    def gated_delta_update(q, k, v, gamma, beta, initial_state=None,
                           mask=None, stream=None):
        """The gated delta rule recurrence over a sequence (MLX's
        ``mx.fast.gated_delta_update``), computed in float32.

        Args:
            q: Queries ``[B, T, Hk, Dk]``.
            k: Keys ``[B, T, Hk, Dk]``.
            v: Values ``[B, T, Hv, Dv]``; ``Hv`` a multiple of ``Hk``
              (value head ``h`` reads query/key head ``h // (Hv // Hk)``).
            gamma: Decay in linear space ``[B, T, Hv]`` (or
              ``[B, T, Hv, Dk]``: one per key feature).
            beta: Delta update rates ``[B, T, Hv]``.
            initial_state: Optional state ``[B, Hv, Dv, Dk]`` (zeros by
              default).
            mask: Optional ``[B, T]`` (or broadcastable to it): a step
              whose mask is False outputs zeros and keeps the state.

        Returns:
            list: ``[output [B, T, Hv, Dv]`` (q, k and v's floating dtype,
            float32 for integers), ``final_state [B, Hv, Dv, Dk]``
            (float32)``]``.
        """
        q, k, v = _arr(q, "q"), _arr(k, "k"), _arr(v, "v")
        gamma, beta = _arr(gamma, "gamma"), _arr(beta, "beta")
        if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
            raise _err("q, k and v must have 4 dimensions [B, T, H, D] but "
                       f"got shapes {_shape(q)}, {_shape(k)} and "
                       f"{_shape(v)}.")
        B, T, Hk, Dk = q.shape
        Hv, Dv = v.shape[2], v.shape[3]
        if k.shape != q.shape:
            raise _err(f"k of shape {_shape(k)} must have the shape of q "
                       f"{_shape(q)}.")
        if v.shape[:2] != (B, T):
            raise _err(f"v of shape {_shape(v)} must have the batch and "
                       f"sequence sizes of q {_shape(q)}.")
        if Hk == 0 or Hv % Hk:
            raise _err(f"the heads of v ({Hv}) must be a multiple of the "
                       f"heads of q and k ({Hk}).")
        if beta.shape != (B, T, Hv):
            raise _err(f"beta of shape {_shape(beta)} must be "
                       f"({B},{T},{Hv}).")
        if gamma.shape not in ((B, T, Hv), (B, T, Hv, Dk)):
            raise _err(f"gamma of shape {_shape(gamma)} must be "
                       f"({B},{T},{Hv}) or ({B},{T},{Hv},{Dk}).")
        if initial_state is not None:
            initial_state = _arr(initial_state, "initial_state")
            if initial_state.shape != (B, Hv, Dv, Dk):
                raise _err(f"initial_state of shape "
                           f"{_shape(initial_state)} must be "
                           f"({B},{Hv},{Dv},{Dk}).")
        if mask is not None:
            mask = _arr(mask, "mask")
            try:
                ok = mx.broadcast_shapes(mask.shape, (B, T)) == (B, T)
            except ValueError:
                ok = False
            if not ok:
                raise _err(f"mask of shape {_shape(mask)} must broadcast "
                           f"to ({B},{T}).")
        dt = mx.result_type(q, k, v)
        if not mx.issubdtype(dt, mx.floating):
            dt = mx.float32
        s = stream
        f32 = mx.float32
        R = Hv // Hk
        qf, kf = q.astype(f32, stream=s), k.astype(f32, stream=s)
        if R > 1:
            qf = mx.repeat(qf, R, axis=2, stream=s)
            kf = mx.repeat(kf, R, axis=2, stream=s)
        vf = v.astype(f32, stream=s)
        gf, bf = gamma.astype(f32, stream=s), beta.astype(f32, stream=s)
        if initial_state is None:
            S = mx.zeros((B, Hv, Dv, Dk), f32, stream=s)
        else:
            S = initial_state.astype(f32, stream=s)
        keep = None
        if mask is not None:
            keep = mx.broadcast_to(mask != 0, (B, T), stream=s)
        per_feature = gamma.ndim == 4
        ys = []
        for t in range(T):
            g = gf[:, t]
            g = g[:, :, None, :] if per_feature else g[:, :, None, None]
            old = S
            S = S * g
            kt, qt = kf[:, t], qf[:, t]  # (B, Hv, Dk)
            kv = mx.matmul(S, kt[..., None], stream=s)[..., 0]  # (B, Hv, Dv)
            d = (vf[:, t] - kv) * bf[:, t][..., None]
            S = S + d[..., None] * kt[:, :, None, :]
            y = mx.matmul(S, qt[..., None], stream=s)[..., 0]
            if keep is not None:
                m = keep[:, t]
                y = mx.where(m[:, None, None], y, 0.0, stream=s)
                S = mx.where(m[:, None, None, None], S, old, stream=s)
            ys.append(y)
        if ys:
            out = mx.stack(ys, axis=1, stream=s)
        else:
            out = mx.zeros((B, 0, Hv, Dv), f32, stream=s)
        return [out.astype(dt, stream=s), S]

    fast.gated_delta_update = gated_delta_update
