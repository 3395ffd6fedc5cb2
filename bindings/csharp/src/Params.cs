// The model's tensors (read and written as fp32) and the session's user metadata.
using System;

namespace Trainrt
{
    /// <summary>What a model tensor is for (TRAINRT_PARAM_ROLE_*).</summary>
    public enum ParamRole
    {
        TokenEmbedding = 0,
        PositionEmbedding = 1,
        /// <summary>A LayerNorm / RMSNorm weight.</summary>
        Norm = 2,
        NormBias = 3,
        /// <summary>A linear layer's weight.</summary>
        Linear = 4,
        LinearBias = 5,
        /// <summary>An untied output head.</summary>
        Head = 6,
        /// <summary>A LoRA adapter's down projection [r, in].</summary>
        LoraA = 7,
        /// <summary>A LoRA adapter's up projection [out, r].</summary>
        LoraB = 8,
    }

    /// <summary>One tensor of the model, in the session's table order.</summary>
    public sealed class ParamInfo
    {
        /// <summary>Its Hugging Face name ("wte.weight", "h.0.attn.c_attn.weight", ...).</summary>
        public string Name { get; private set; }
        public ParamRole Role { get; private set; }
        /// <summary>Its ndim dims, as in Hugging Face files (a copy).</summary>
        public long[] Shape { get { return (long[])shape.Clone(); } }
        public int Ndim { get { return shape.Length; } }
        /// <summary>Elements (the product of Shape).</summary>
        public long Numel { get; private set; }
        /// <summary>Where it starts in the flat buffer of Session.ReadParams().</summary>
        public long Offset { get; private set; }
        /// <summary>The block it belongs to; -1 for the embeddings, the final norm and the head.</summary>
        public int Layer { get; private set; }
        /// <summary>False: frozen (a LoRA run's base, train.trainable).</summary>
        public bool Trainable { get; private set; }

        readonly long[] shape;

        internal ParamInfo(string name, ParamInfoNative p)
        {
            Name = name;
            Role = (ParamRole)p.Role;
            long[] all = { p.Shape0, p.Shape1, p.Shape2, p.Shape3 };
            shape = new long[Math.Max(0, Math.Min(p.Ndim, all.Length))];
            Array.Copy(all, shape, shape.Length);
            Numel = p.Numel;
            Offset = p.Offset;
            Layer = p.Layer;
            Trainable = p.Trainable != 0;
        }

        public override string ToString()
        {
            return string.Format("{0} {1} [{2}] offset {3}{4}", Name, Role,
                string.Join(", ", Array.ConvertAll(shape, d => d.ToString())), Offset,
                Trainable ? "" : " (frozen)");
        }
    }

    public sealed partial class Session
    {
        /// <summary>How many tensors the model has, and how many floats the flat buffer holds.</summary>
        public void ParamCount(out long tensors, out long numel)
        {
            Errors.Check(Native.trainrt_session_param_count(out tensors, out numel, Live()),
                         "trainrt_session_param_count");
        }

        /// <summary>Tensor index (0 .. tensors - 1).</summary>
        public ParamInfo Param(long index)
        {
            SessionHandle h = Live();
            ParamInfoNative p = ParamInfoNative.Create();
            string name = Buffers.Read(delegate(byte[] b, UIntPtr c, out UIntPtr n) {
                return Native.trainrt_session_param_info(ref p, b, c, out n, h, index);
            }, "trainrt_session_param_info");
            return new ParamInfo(name, p);
        }

        /// <summary>Every tensor of the model, in table order (embeddings, each block, final
        /// norm, head; a LoRA run's adapters after the linear they adapt).</summary>
        public ParamInfo[] Params()
        {
            long tensors, numel;
            ParamCount(out tensors, out numel);
            ParamInfo[] all = new ParamInfo[tensors];
            for (long i = 0; i < tensors; ++i) all[i] = Param(i);
            return all;
        }

        /// <summary>The fp32 master weights (as a checkpoint would save them) of the tensor
        /// called name, or with name null of every tensor back to back (the flat buffer;
        /// ParamInfo.Offset says where each starts). An unknown name throws
        /// TrainrtException (Status.InvalidArgument) naming the closest tensor.</summary>
        public float[] ReadParams(string name = null)
        {
            SessionHandle h = Live();
            byte[] n = name == null ? null : Utf8.Arg(name, "name");
            long count = 0;
            if (name == null)
            {
                long tensors;
                ParamCount(out tensors, out count);
            }
            else
            {
                foreach (ParamInfo p in Params())
                    if (p.Name == name) { count = p.Numel; break; }
            }
            // At least one float: an unknown name still reaches the library, whose message
            // names the closest tensor.
            float[] output = new float[Math.Max(count, 1)];
            Errors.Check(Native.trainrt_session_read_params(output, (UIntPtr)count, h, n),
                         "trainrt_session_read_params");
            return count == output.Length ? output : new float[0];
        }

        /// <summary>Replaces the tensor called name (null: every tensor, from a flat buffer)
        /// with values, which must hold exactly its number of floats. The bf16/fp16 working
        /// copies follow; the optimizer's moments, step and schedule are kept. Refused with
        /// the session unchanged: a size mismatch or an unknown name (Status.InvalidArgument),
        /// a NaN or infinity (Status.NonFinite).</summary>
        public void WriteParams(float[] values, string name = null)
        {
            if (values == null) throw new ArgumentNullException("values");
            byte[] n = name == null ? null : Utf8.Arg(name, "name");
            // Never a NULL pointer: for an empty array the library's size check speaks.
            float[] v = values.Length == 0 ? new float[1] : values;
            Errors.Check(Native.trainrt_session_write_params(Live(), n, v, (UIntPtr)values.Length),
                         "trainrt_session_write_params");
        }

        /// <summary>Sets a user metadata key (1-128 bytes of [A-Za-z0-9_.-]) to value (up to
        /// 64 KiB; at most 256 keys). Checkpoints save them; Load restores them.</summary>
        public void SetMetadata(string key, string value)
        {
            byte[] k = Utf8.Arg(key, "key"), v = Utf8.Arg(value, "value");
            Errors.Check(Native.trainrt_session_set_metadata(Live(), k, v), "trainrt_session_set_metadata");
        }

        /// <summary>Removes a metadata key (no error if absent).</summary>
        public void RemoveMetadata(string key)
        {
            byte[] k = Utf8.Arg(key, "key");
            Errors.Check(Native.trainrt_session_set_metadata(Live(), k, null), "trainrt_session_set_metadata");
        }

        /// <summary>The value of a metadata key; false (value null) when the session has none.</summary>
        public bool TryGetMetadata(string key, out string value)
        {
            SessionHandle h = Live();
            byte[] k = Utf8.Arg(key, "key");
            int found = 0;
            string v = Buffers.Read(delegate(byte[] b, UIntPtr c, out UIntPtr n) {
                return Native.trainrt_session_get_metadata(b, c, out n, out found, h, k);
            }, "trainrt_session_get_metadata");
            value = found != 0 ? v : null;
            return found != 0;
        }

        /// <summary>Every metadata key, sorted bytewise.</summary>
        public string[] MetadataKeys()
        {
            SessionHandle h = Live();
            long count;
            Errors.Check(Native.trainrt_session_metadata_count(out count, h), "trainrt_session_metadata_count");
            string[] keys = new string[count];
            for (long i = 0; i < count; ++i)
            {
                long index = i;
                keys[i] = Buffers.Read(delegate(byte[] b, UIntPtr c, out UIntPtr n) {
                    return Native.trainrt_session_metadata_key(b, c, out n, h, index);
                }, "trainrt_session_metadata_key");
            }
            return keys;
        }
    }
}
