#include "session/session_file.h"

#include "common/error.h"
#include "maps/colormap.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace torchscope {
namespace {

using json = nlohmann::json;

std::string describeValue(const json& value)
{
    const std::string text = value.dump();
    return std::string(value.type_name()) + " " + (text.size() > 60 ? text.substr(0, 57) + "..." : text);
}

std::string stringField(const json& session, const char* name)
{
    if (!session.contains(name) || session[name].is_null())
        return {};
    if (!session[name].is_string())
        throw Error(
            std::string("the session's \"") + name + "\" must be a string, not " + describeValue(session[name]));
    return session[name].get<std::string>();
}

std::vector<std::string> stringsField(const json& session, const char* name)
{
    std::vector<std::string> values;
    if (!session.contains(name) || session[name].is_null())
        return values;
    const json& list = session[name];
    if (!list.is_array())
        throw Error(
            std::string("the session's \"") + name + "\" must be a list of strings, not " + describeValue(list));
    for (const auto& item : list) {
        if (!item.is_string())
            throw Error(std::string("the session's \"") + name + "\" must be a list of strings, but holds "
                + describeValue(item));
        values.push_back(item.get<std::string>());
    }
    return values;
}

int64_t integerField(const json& session, const char* name, int64_t fallback, int64_t lowest)
{
    if (!session.contains(name) || session[name].is_null())
        return fallback;
    const json& value = session[name];
    if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX)
        || value.get<int64_t>() < lowest)
        throw Error(std::string("the session's \"") + name + "\" must be an integer of at least "
            + std::to_string(lowest) + ", not " + describeValue(value));
    return value.get<int64_t>();
}

// The "view" object: each field optional, each checked against what the window can show.
SessionView viewField(const json& session)
{
    SessionView view;
    if (!session.contains("view") || session["view"].is_null())
        return view;
    const json& object = session["view"];
    if (!object.is_object())
        throw Error("the session's \"view\" must be an object, not " + describeValue(object));
    view.colorMap = stringField(object, "color_map");
    const auto& maps = colorMapNames();
    if (!view.colorMap.empty()
        && std::none_of(maps.begin(), maps.end(), [&](const auto& entry) { return entry.second == view.colorMap; })) {
        std::string known;
        for (const auto& entry : maps)
            known += (known.empty() ? "" : ", ") + entry.second;
        throw Error("the session's view has an unknown \"color_map\" '" + view.colorMap + "' (known: " + known + ")");
    }
    view.contrast = stringField(object, "contrast");
    const auto& contrasts = SessionView::contrastNames();
    if (!view.contrast.empty() && std::find(contrasts.begin(), contrasts.end(), view.contrast) == contrasts.end())
        throw Error("the session's view has an unknown \"contrast\" '" + view.contrast
            + "' (known: per-channel, shared, symmetric)");
    view.zoom = static_cast<int>(integerField(object, "zoom", 0, 0));
    if (view.zoom > 32)
        throw Error("the session's view has \"zoom\" " + std::to_string(view.zoom) + ": at most 32 pixels per value");
    view.overlayOpacity = static_cast<int>(integerField(object, "overlay_opacity", -1, 0));
    if (view.overlayOpacity > 100)
        throw Error("the session's view has \"overlay_opacity\" " + std::to_string(view.overlayOpacity)
            + ": a percentage, at most 100");
    return view;
}

} // namespace

const std::vector<std::string>& SessionView::contrastNames()
{
    static const std::vector<std::string> names{"per-channel", "shared", "symmetric"};
    return names;
}

SessionFile SessionFile::parse(const std::string& text, const ModelSetup& base)
{
    json session;
    try {
        session = json::parse(text);
    } catch (const json::exception& e) {
        throw Error(std::string("the session is not valid JSON: ") + e.what());
    }
    if (!session.is_object() || !session.contains("format") || session["format"] != "torchscope-session")
        throw Error("this is not a TorchScope session file (no \"format\": \"torchscope-session\")");
    const int64_t version = integerField(session, "version", 1, 1);
    if (version > Version)
        throw Error("the session was saved by a newer TorchScope (session version " + std::to_string(version)
            + "; this one reads up to " + std::to_string(Version) + ")");

    SessionFile file;
    file.model = stringField(session, "model");
    if (file.model.empty())
        throw Error("the session names no model (\"model\" is missing or empty)");
    file.device = stringField(session, "device");
    file.grabs = stringsField(session, "grabs");
    for (const auto& grab : file.grabs)
        GrabSpec::parse(grab); // refused here, by name, rather than when the window runs
    file.truncate = stringField(session, "truncate");
    for (const auto& edit : stringsField(session, "edits"))
        file.edits.push_back(EditSpec::parse(edit));
    try {
        if (session.contains("setup") && !session["setup"].is_null()) {
            if (!session["setup"].is_object())
                throw Error("it must be an object, not " + describeValue(session["setup"]));
            file.setup = ModelSetup::fromJson(session["setup"].dump(), base);
        } else if (const std::string spec = stringField(session, "preprocess"); !spec.empty()) {
            file.setup = readSetupSpec(spec, base); // sessions of version 1
        }
    } catch (const Error& e) {
        throw Error(std::string("the session's input setup: ") + e.what());
    }
    file.target = integerField(session, "target", -1, -1);
    file.selectedLayer = stringField(session, "selected_layer");
    file.images = stringsField(session, "images");
    file.selectedImage = integerField(session, "selected_image", 0, 0);
    file.view = viewField(session);
    return file;
}

std::string SessionFile::toJson() const
{
    json edited = json::array();
    for (const auto& e : edits)
        edited.push_back(e.toString());
    json session{{"format", "torchscope-session"}, {"version", Version}, {"model", model}, {"device", device},
        {"grabs", grabs}, {"truncate", truncate}, {"edits", edited}, {"images", images}, {"target", target},
        {"selected_layer", selectedLayer}, {"selected_image", selectedImage}};
    if (setup)
        session["setup"] = json::parse(setup->toJson());
    json shown = json::object();
    if (!view.colorMap.empty())
        shown["color_map"] = view.colorMap;
    if (!view.contrast.empty())
        shown["contrast"] = view.contrast;
    if (view.zoom > 0)
        shown["zoom"] = view.zoom;
    if (view.overlayOpacity >= 0)
        shown["overlay_opacity"] = view.overlayOpacity;
    if (!shown.empty())
        session["view"] = shown;
    return session.dump(2) + "\n";
}

} // namespace torchscope
