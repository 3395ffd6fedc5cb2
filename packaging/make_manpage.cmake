# Build-time helper: run the freshly built `trainrt --help` and write
#   HELP_OUT  the help text as is (installed as share/doc/trainrt/trainrt-help.txt)
#   MAN_OUT   a short man page (section 1) wrapping the same text
# Called as: cmake -DEXE=... -DVERSION=... -DHELP_OUT=... -DMAN_OUT=... -P make_manpage.cmake
execute_process(COMMAND "${EXE}" --help OUTPUT_VARIABLE help ERROR_VARIABLE help_err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR help STREQUAL "")
  message(FATAL_ERROR "`${EXE} --help` failed (${rc}): ${help_err}")
endif()
file(WRITE "${HELP_OUT}" "${help}")
# roff: escape backslashes, keep lines starting with . or ' literal.
string(REPLACE "\\" "\\e" body "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" body "${body}")
file(WRITE "${MAN_OUT}" ".TH TRAINRT 1 \"\" \"trainrt ${VERSION}\" \"User Commands\"
.SH NAME
trainrt \\- train, evaluate and sample small GPT models with libtrainrt
.SH SYNOPSIS
.B trainrt
.I command
[\\fIoptions\\fR]
.SH DESCRIPTION
The command-line front end of libtrainrt. The text below is the output of
\\fBtrainrt \\-\\-help\\fR; \\fBtrainrt\\fR \\fIcommand\\fR \\fB\\-\\-help\\fR describes one command.
.PP
.nf
${body}.fi
.SH SEE ALSO
/usr/share/doc/trainrt/trainrt-help.txt
")
