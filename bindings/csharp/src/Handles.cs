using System;
using System.Runtime.InteropServices;

namespace Trainrt
{
    /// <summary>Owns a trainrt_config*; ReleaseHandle calls trainrt_config_destroy.</summary>
    public sealed class ConfigHandle : SafeHandle
    {
        // Log delegates handed to C for this object: alive as long as the handle.
        internal readonly System.Collections.Generic.List<object> KeepAlive =
            new System.Collections.Generic.List<object>();
        internal ConfigHandle(IntPtr p) : base(IntPtr.Zero, true) { SetHandle(p); }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
        protected override bool ReleaseHandle()
        {
            Native.trainrt_config_destroy(handle);
            return true;
        }
    }

    /// <summary>Owns a trainrt_session*; ReleaseHandle calls trainrt_session_destroy. The
    /// SafeHandle reference count defers the destroy until any call in flight on another
    /// thread (e.g. Train) has returned.</summary>
    public sealed class SessionHandle : SafeHandle
    {
        internal readonly System.Collections.Generic.List<object> KeepAlive =
            new System.Collections.Generic.List<object>();
        internal SessionHandle(IntPtr p) : base(IntPtr.Zero, true) { SetHandle(p); }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
        protected override bool ReleaseHandle()
        {
            Native.trainrt_session_destroy(handle);
            return true;
        }
    }

    /// <summary>Owns a trainrt_tokenizer*; ReleaseHandle calls trainrt_tokenizer_destroy. A
    /// tokenizer is immutable, so several threads may call through it at once; the SafeHandle
    /// reference count defers the destroy until every call in flight has returned.</summary>
    public sealed class TokenizerHandle : SafeHandle
    {
        internal TokenizerHandle(IntPtr p) : base(IntPtr.Zero, true) { SetHandle(p); }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
        protected override bool ReleaseHandle()
        {
            Native.trainrt_tokenizer_destroy(handle);
            return true;
        }
    }

    /// <summary>Owns a trainrt_chat_template*; ReleaseHandle calls trainrt_chat_template_destroy.
    /// Immutable like a tokenizer: several threads may render at once, and the destroy waits
    /// for every call in flight.</summary>
    public sealed class ChatTemplateHandle : SafeHandle
    {
        internal ChatTemplateHandle(IntPtr p) : base(IntPtr.Zero, true) { SetHandle(p); }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
        protected override bool ReleaseHandle()
        {
            Native.trainrt_chat_template_destroy(handle);
            return true;
        }
    }
}
