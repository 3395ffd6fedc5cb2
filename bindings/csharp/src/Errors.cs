using System;

namespace Trainrt
{
    /// <summary>trainrt_status codes (never renumbered).</summary>
    public enum Status
    {
        Ok = 0,
        Stopped = 1,
        InvalidArgument = -1,
        Config = -2,
        IO = -3,
        Format = -4,
        OutOfMemory = -5,
        Device = -6,
        Unsupported = -7,
        Busy = -8,
        Cancelled = -9,
        VersionMismatch = -10,
        Internal = -11,
        DeviceLost = -12,
        NonFinite = -13,
    }

    /// <summary>A failed libtrainrt call: the status and the library's own message.</summary>
    public class TrainrtException : Exception
    {
        public Status Status { get; private set; }
        /// <summary>trainrt_last_error_message() at the time of the failure.</summary>
        public string NativeMessage { get; private set; }

        public TrainrtException(Status status, string nativeMessage, string what)
            : base(what + ": " + Library.StatusString(status) +
                   (string.IsNullOrEmpty(nativeMessage) ? "" : ": " + nativeMessage))
        {
            Status = status;
            NativeMessage = nativeMessage ?? "";
        }

        /// <summary>A failure of the binding itself (the library could not be loaded): the
        /// whole message, without asking the library for its status text.</summary>
        internal TrainrtException(Status status, string message, Exception inner)
            : base(message, inner)
        {
            Status = status;
            NativeMessage = "";
        }
    }

    internal static class Errors
    {
        /// <summary>Throws on a negative status (reading the thread-local message at once);
        /// returns non-negative ones (Ok, Stopped).</summary>
        internal static Status Check(int status, string what)
        {
            if (status < 0)
                throw new TrainrtException((Status)status,
                    Utf8.Decode(Native.trainrt_last_error_message()), what);
            return (Status)status;
        }
    }
}
