using System;

namespace Trainrt
{
    /// <summary>Loads libtrainrt on the first call that needs it, so that a missing library is
    /// a TrainrtException saying what to install or set, not the runtime's bare
    /// DllNotFoundException. Every entry point that takes no handle calls Require first (a
    /// handle proves the library is loaded).</summary>
    internal static class Loading
    {
        static volatile bool loaded;

        internal static void Require()
        {
            if (loaded) return;
            try
            {
                Native.trainrt_abi_version(); // in every libtrainrt: the cheapest probe
                loaded = true;
            }
            catch (DllNotFoundException e) { throw NotLoaded("was not found", e); }
            catch (BadImageFormatException e) { throw NotLoaded("is not a library for this machine", e); }
            catch (EntryPointNotFoundException e)
            {
                throw NotLoaded("was found but has no trainrt_abi_version (not libtrainrt, or " +
                                "older than this binding)", e);
            }
        }

        static TrainrtException NotLoaded(string what, Exception e)
        {
            string path = Environment.GetEnvironmentVariable("LD_LIBRARY_PATH");
            return new TrainrtException(Status.Unsupported,
                "libtrainrt could not be loaded: the native library \"" + Native.Lib + "\" " + what +
                " (Mono maps it to libtrainrt.so.0 through Trainrt.dll.config, .NET looks for " +
                "libtrainrt.so; both search the application's folder and the loader's path, " +
                "LD_LIBRARY_PATH=" + (string.IsNullOrEmpty(path) ? "(unset)" : "\"" + path + "\"") +
                "). Install the libtrainrt0 package, or set LD_LIBRARY_PATH to the folder " +
                "holding libtrainrt.so.0 (a source build: its build folder). The runtime said: " +
                e.Message, e);
        }
    }
}
