// SentencePiece models through libsentencepiece (sentencepiece_tokenizer.h).
#include "tokenizer/sentencepiece_tokenizer.h"

#include <limits>

#include "core/error.h"

#ifdef TRAINRT_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace trt::tok {

#ifdef TRAINRT_HAVE_SENTENCEPIECE
namespace {

// SentencePieceProcessor's encode and decode are const and keep no state between calls, so
// one loaded model serves every thread.
class SentencePieceTokenizer final : public TokenizerModel {
public:
    SentencePieceTokenizer(std::string_view bytes, const std::string& source) : source_(source) {
        const sentencepiece::util::Status st = sp_.LoadFromSerializedProto(bytes);
        if (!st.ok())
            fail(Status::Format, source, ": not a SentencePiece model SentencePiece can load (",
                 st.ToString(), ")");
        if (sp_.GetPieceSize() <= 0)
            fail(Status::Format, source, ": the SentencePiece model has no pieces");
    }

    std::vector<uint32_t> encode(std::string_view text) const override {
        std::vector<int> ids;
        const sentencepiece::util::Status st = sp_.Encode(text, &ids);
        if (!st.ok())
            fail(Status::InvalidArgument, source_, ": SentencePiece cannot encode the text (",
                 st.ToString(), ")");
        return std::vector<uint32_t>(ids.begin(), ids.end());  // ids are >= 0
    }

    std::string decode(const std::vector<uint32_t>& ids) const override {
        const std::vector<int> in(ids.begin(), ids.end());  // below id_limit(): fits an int
        std::string out;
        const sentencepiece::util::Status st = sp_.Decode(in, &out);
        if (!st.ok())
            fail(Status::InvalidArgument, source_, ": SentencePiece cannot decode the ids (",
                 st.ToString(), ")");
        return out;
    }

    uint32_t id_limit() const override { return static_cast<uint32_t>(sp_.GetPieceSize()); }

    bool find(std::string_view token, uint32_t& id) const override {
        // PieceToId answers unk_id for a piece it does not have: check the piece back.
        const int i = sp_.PieceToId(token);
        if (i < 0 || i >= sp_.GetPieceSize() || sp_.IdToPiece(i) != token) return false;
        id = static_cast<uint32_t>(i);
        return true;
    }

    std::string eos_token() const override {
        const int e = sp_.eos_id();
        return e >= 0 && e < sp_.GetPieceSize() ? sp_.IdToPiece(e) : std::string();
    }

    // The dummy prefix ("▁" before each encoded text) and whitespace normalization make pieces
    // encode differently from the whole.
    bool splits_at_line_starts() const override { return false; }

private:
    std::string source_;
    sentencepiece::SentencePieceProcessor sp_;
};

}  // namespace

bool sentencepiece_supported() { return true; }

std::shared_ptr<const TokenizerModel> sentencepiece_from_bytes(std::string_view bytes,
                                                               const std::string& source) {
    return std::make_shared<const SentencePieceTokenizer>(bytes, source);
}

#else

bool sentencepiece_supported() { return false; }

std::shared_ptr<const TokenizerModel> sentencepiece_from_bytes(std::string_view,
                                                               const std::string& source) {
    fail(Status::Unsupported, source, ": a SentencePiece model, and this build of libtrainrt has "
         "no SentencePiece support (rebuild with libsentencepiece-dev installed, "
         "-DTRAINRT_SENTENCEPIECE=ON), or use the model's tokenizer.json");
}

#endif

}  // namespace trt::tok
