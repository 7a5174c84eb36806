"""The dashboard's pages, one Streamlit script each; ``_common`` holds what they share."""
